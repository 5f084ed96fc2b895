"""The Ultra Ethernet transport (issue 41): the reference's fabric and
matrices, what a run shows of trimming and spraying, and bad input refused
in one line naming the parameter (and a matrix's line)."""

from __future__ import annotations

from pathlib import Path

import cnsim
import polars as pl
import pytest
from cnsim import validate as V


def _small(**over: object) -> cnsim.Scenario:
    return cnsim.load("uet_fattree").replace(**{"topology.hosts": 16, **over})


def test_one_connection_completes_as_the_reference_prints_it():
    # 489 full packets and one of 2,010 B, 6 store-and-forward hops at 100
    # Gbit/s and 1 us, the last ACK back: the reference prints 176.2 us.
    r = cnsim.run(_small(**{"workload.file": "one.cm"}), progress=False)
    f = r.flows.row(0, named=True)
    assert f["src"] == "H0" and f["dst"] == "H13"
    assert f["fct_acked_us"] == pytest.approx(176.1995, abs=1e-3)
    assert f["fct_us"] == pytest.approx(f["ideal_fct_us"])  # alone on the fabric: slowdown 1
    assert r.metric("retransmitted_frames")[0] == 0


def test_an_incast_trims_nacks_and_delivers_every_byte(tmp_path: Path):
    sc = _small(**{"workload.file": "incast.cm", "trace.events": ["trim", "nack_tx", "hold"]})
    r = cnsim.run(sc, progress=False)
    assert r.metric("flows_completed")[0] == 15
    ev = r.events()
    trims = ev.filter(pl.col("kind") == "trim")
    assert len(trims) > 0
    assert set(trims["reason"].unique()) == {"arriving", "queued"}, "the coin picks either victim"
    # Only ports on the way into the receiver's pod overflow: its ToR's port
    # to it, and the ports into the pod's aggregation switches and its ToR.
    into = {p.split("->")[1] for p in trims["port"].unique().to_list()}
    assert into <= {"H15", "T7", "F3_0", "F3_1"}, into
    assert "H15" in into
    # One NACK per trimmed frame (none lost: the header queue never fills here).
    assert len(ev.filter(pl.col("kind") == "nack_tx")) == len(trims)
    resent = r.flows["retransmitted"].sum()
    assert resent == len(trims)
    assert r.metric("frames_trimmed")[0] == len(trims)


def test_spraying_reorders_frames_and_the_receiver_keeps_them():
    sprayed = cnsim.run(_small(**{"workload.file": "perm_16n_16c_2MB.cm", "uet.paths": 128}), progress=False)
    held = sprayed.metric("frames_held")[0]
    assert held > 0, "frames of different paths overtake each other"
    assert sprayed.flows["retransmitted"].sum() == 0, "a frame kept out of order is not sent again"
    single = cnsim.run(_small(**{"workload.file": "perm_16n_16c_2MB.cm", "uet.paths": 1}), progress=False)
    # One path per flow: the permutation's flows collide on links and trim.
    assert single.flows["fct_acked_us"].max() > 1.5 * sprayed.flows["fct_acked_us"].max()


@pytest.mark.parametrize("cc", ["rccc", "both"])
def test_receiver_credit_paces_an_incast_at_the_receivers_rate(cc: str):
    # 15 senders into H15 under RCCC: the receiver grants credit at 99% of
    # its line rate, so the incast takes about its bytes at that rate, and
    # what the speculative first windows overflow is trimmed and recovered.
    r = cnsim.run(_small(**{"workload.file": "incast.cm", "uet.cc": cc}), progress=False)
    f = r.flows["fct_acked_us"]
    assert r.metric("flows_completed")[0] == 15
    wire = 15 * (489 * 4150 + 2010) * 8 / 100e3  # us at 100 Gbit/s
    assert wire / 0.99 < f.max() < 1.05 * wire / 0.99 + 20
    assert f.min() > 0.9 * f.max(), "credit shares the receiver: the flows finish together"
    assert r.metric("frames_trimmed")[0] > 0


def test_the_kary_fat_tree_is_the_reference_s():
    sc = _small()
    names = [n.name for n in sc.model.nodes]
    assert sum(n.startswith("H") for n in names) == 16
    assert sum(n.startswith("T") for n in names) == 8, "K = 4: 4 pods of 2 racks"
    assert sum(n.startswith("F") for n in names) == 8
    assert sum(n.startswith("S") for n in names) == 4, "(K/2)^2 cores"
    assert len(sc.model.links) == 16 + 16 + 16


@pytest.mark.parametrize(
    "sets, param",
    [
        (["topology.hosts=100"], "topology.hosts"),
        (["uet.paths=0"], "uet.paths"),
        (["uet.paths=3"], "uet.paths"),
        (["uet.balancer=spray"], "uet.balancer"),
        (["uet.trim_bytes=5000"], "uet.trim_bytes"),
        (["uet.cc=credit"], "uet.cc"),
        (["workload.file=nowhere.cm"], "workload.file"),
        (["workload.header_bytes=4150"], "workload.header_bytes"),
    ],
)
def test_bad_settings_are_refused_naming_them(tmp_path: Path, refused, sets: list[str], param: str):
    args = [a for s in sets for a in ("--set", s)]
    lines = refused(
        tmp_path, Path("uet_fattree"), "--set", "topology.hosts=16", "--set", "workload.file=one.cm", *args
    )
    assert len(lines) == 1 and param in lines[0], lines


@pytest.mark.parametrize(
    "text, what",
    [
        ("Nodes 16\nConnections 1\n0->16 start 0 size 5\n", "line 3: destination 16 is not a node"),
        ("Nodes 16\nConnections 1\n0->1 start 0 size 0\n", "line 3: 'size 0'"),
        ("Nodes 16\nConnections 1\n0->1 start 0 sise 5\n", "line 3: unknown token 'sise'"),
        ("Nodes 16\nConnections 2\n0->1 start 0 size 5\n", "line 2: 'Connections 2' but the file has 1"),
        ("Nodes 128\nConnections 1\n0->1 start 0 size 5\n", "has Nodes 128; the workload has 16 hosts"),
        ("Nodes 16\nConnections 1\n0->1 trigger 3 size 5\n", "line 3: trigger 3 is never defined"),
    ],
)
def test_a_bad_matrix_is_refused_naming_its_line(tmp_path: Path, refused, text: str, what: str):
    m = tmp_path / "bad.cm"
    m.write_text(text)
    lines = refused(
        tmp_path, Path("uet_fattree"), "--set", "topology.hosts=16", "--set", f"workload.file={m}"
    )
    assert len(lines) == 1 and "workload.file" in lines[0] and what in lines[0], lines


def test_a_matrix_beyond_max_flows_is_refused_before_it_is_read(tmp_path: Path, refused):
    m = tmp_path / "huge.cm"
    m.write_text("Nodes 16\nConnections 5000000\n")  # the header is enough
    lines = refused(
        tmp_path, Path("uet_fattree"), "--set", "topology.hosts=16", "--set", f"workload.file={m}"
    )
    assert len(lines) == 1 and "workload.max_flows" in lines[0], lines


def test_a_million_connection_matrix_is_read_and_runs_within_memory(tmp_path: Path, cli):
    # 10^6 one-packet flows around 16 hosts (each to the next): read, built
    # and run for 20 us, in bounded memory, without a hang.
    m = tmp_path / "million.cm"
    rows = "".join(f"{i % 16}->{(i + 1) % 16} start {i // 4000} size 100\n" for i in range(1_000_000))
    m.write_text(f"Nodes 16\nConnections 1000000\n{rows}")
    p = cli(
        "run", "uet_fattree", "--set", "topology.hosts=16", "--set", f"workload.file={m}",
        "--duration", "0.02", "--no-report", "--json", "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    r = cnsim.open_results(tmp_path / "o")
    assert r.metric("flows_started")[0] > 0


@pytest.mark.slow
def test_validate_uet_passes():
    rows = V.uet(None, False)
    assert all(r.ok or r.known for r in rows), [r.as_dict() for r in rows if not r.ok]
    assert sum(not r.ok for r in rows) <= 1


def test_an_oversubscribed_fabric_agrees_with_the_reference():
    """The reference's 128-host 4:1 fat tree (one core uplink per
    aggregation switch) under the permutation i -> i + 64: every flow
    crosses the core at a quarter of its rate, queues trim, and the
    completions are the reference's within 5% (docs/calibration.md
    section 9); the same fabric at 1:1 runs at line rate."""
    from cnsim.validate_uet import OVERSUBSCRIBED, oversubscribed_scenario, uet_fcts

    one = cnsim.run(oversubscribed_scenario(4, 4), progress=False)
    four = cnsim.run(oversubscribed_scenario(4, 1), progress=False)
    a, b = uet_fcts(one), uet_fcts(four)
    _, _, median, tail, trims = OVERSUBSCRIBED["4:1 (one core uplink per aggregation switch)"]
    assert a["flows"] == b["flows"] == 128
    assert one.metric("frames_trimmed")[0] == 0 and a["tail"] < 200.0
    assert abs(b["median"] - median) <= 0.05 * median
    assert abs(b["tail"] - tail) <= 0.05 * tail
    assert abs(four.metric("frames_trimmed")[0] - trims) <= 0.10 * trims
