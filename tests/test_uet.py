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


def _degraded_incast(scale: bool) -> cnsim.Results:
    """The 16-node incast into H15 with the core link S0_0 -> F3_0 (into the
    receiver's pod) at 25 Gbit/s from the start, its port traced."""
    event = {"at_ms": 0.0, "action": "link_rate", "from": "S0_0", "to": "F3_0", "rate_gbps": 25.0}
    sc = _small(
        **{
            "workload.file": "incast.cm",
            "trace.events": ["trim", "mark", "dequeue"],
            "trace.ports": ["S0_0->F3_0"],
        }
    ).replace(events=[{**event, "scale_buffers": True}] if scale else [event])
    return cnsim.run(sc, progress=False)


def test_a_degraded_link_scales_its_queue_and_ecn_thresholds_as_the_reference():
    """`scale_buffers`: the degraded port's queue (one BDP, 178,450 B) and its
    ECN thresholds (37,350 / 145,250 B) are cut to 25% with its rate,
    floored to whole bytes as the reference's `mem_b` (44,612; 9,337 /
    36,312 B); frames are conserved; without it only the rate changes."""
    from cnsim.degraded import failed_pods

    frame, cap, kmin, kmax = 4150, 178_450 * 25 // 100, 37_350 * 25 // 100, 145_250 * 25 // 100
    runs = {scale: _degraded_incast(scale) for scale in (False, True)}
    for r in runs.values():
        assert r.metric("flows_completed")[0] == 15
        f = r.runs[0].frames
        assert (
            f["generated"]
            == f["delivered"] + f["dropped_cp"] + f["dropped_rl"] + f["dropped_nic"] + f["in_flight"]
        )
        assert f["in_flight"] == 0 and f["trimmed"] == f["nacks"]
    ev = {
        s: r.events(ports=["S0_0->F3_0"], columns=["kind", "queue_bytes", "bytes", "ecn", "reason"])
        for s, r in runs.items()
    }
    data = pl.col("bytes") > 64
    for s, e in ev.items():
        deq = e.filter((pl.col("kind") == "dequeue") & data)
        marks = e.filter(pl.col("kind") == "mark")
        trims = e.filter(pl.col("kind") == "trim")
        left = pl.col("queue_bytes") - pl.col("bytes")
        limit, low, high = (cap, kmin, kmax) if s else (178_450, 37_350, 145_250)
        assert deq["queue_bytes"].max() <= limit < deq["queue_bytes"].max() + frame, (
            "the queue fills to its limit"
        )
        arriving = trims.filter(pl.col("reason") == "arriving")
        assert len(arriving) > 0 and (arriving["queue_bytes"] + frame > limit).all(), (
            "trimmed only at the limit"
        )
        assert marks.select(left.min()).item() > low, "no mark at or below the low threshold"
        assert deq.filter(left > high)["ecn"].all(), (
            "every frame leaving more than the high threshold is marked"
        )
    # Scaled: marks below the configured low threshold, a queue a quarter's.
    assert (
        ev[True]
        .filter(pl.col("kind") == "mark")
        .select((pl.col("queue_bytes") - pl.col("bytes")).min())
        .item()
        < 37_350
    )
    # Nothing but that port changes: the same run without the event at all
    # is the rate-only run's fabric (and existing scenarios' fingerprints
    # are unchanged: scripts/engine_fingerprint.py).
    assert runs[True].metric("frames_trimmed")[0] != runs[False].metric("frames_trimmed")[0]
    # The reference's picks as events (cnsim.degraded): -failed 2 on the
    # 16-host K-ary fat tree (K = 4) cuts the core links into F0_0.
    assert failed_pods(4, 2, 2, 2) == [("S0_0", "F0_0"), ("S0_1", "F0_0")]
    assert failed_pods(4, 2, 2, 3) == [("S0_0", "F0_0"), ("S0_1", "F0_0"), ("S1_0", "F0_1")]
    assert failed_pods(8, 4, 1, 5) == [("S0_0", "F0_0"), ("S1_0", "F0_1")]


def test_without_scale_buffers_a_link_rate_event_is_unchanged():
    """`scale_buffers = false` (the default) is the event as it was: the
    same results to the bit as an event that does not name it."""
    event = {"at_ms": 0.0, "action": "link_rate", "from": "S0_0", "to": "F3_0", "rate_gbps": 25.0}
    base = _small(**{"workload.file": "incast.cm"})
    a = cnsim.run(base.replace(events=[event]), progress=False)
    b = cnsim.run(base.replace(events=[{**event, "scale_buffers": False}]), progress=False)
    assert a.runs[0].frames == b.runs[0].frames
    assert a.flows["fct_acked_us"].to_list() == b.flows["fct_acked_us"].to_list()


@pytest.mark.parametrize(
    "event, what",
    [
        (
            'action = "link_rate"\nfrom = "S0_0"\nto = "F3_0"\nrate_gbps = 0.0\nscale_buffers = true',
            "rate_gbps > 0",
        ),
        ('action = "stop"\nnode = "H0"\nscale_buffers = true', "belongs to a link_rate event"),
        (
            'action = "link_rate"\nfrom = "H0"\nto = "T0"\nrate_gbps = 25.0\nscale_buffers = true',
            "is a station",
        ),
        (
            'action = "link_rate"\nfrom = "S0_0"\nto = "F3_0"\nrate_gbps = 25.0\nscale_buffers = 1',
            "true or false",
        ),
    ],
)
def test_bad_scale_buffers_is_refused_naming_it(tmp_path: Path, refused, event: str, what: str):
    builtin = Path(cnsim.__file__).parent / "scenarios" / "uet_fattree.toml"
    path = tmp_path / "degraded.toml"
    path.write_text(f"{builtin.read_text()}\n[[events]]\nat_ms = 0.0\n{event}\n")
    lines = refused(tmp_path, path, "--set", "topology.hosts=16", "--set", "workload.file=incast.cm")
    assert len(lines) == 1 and "scale_buffers" in lines[0] and what in lines[0], lines


def test_degraded_core_links_agree_with_the_reference():
    """The reference's `-failed 4` on its 128-host 1:1 fat tree (the four
    core links into F0_0 at 25% rate, queue and ECN thresholds) as cnsim
    events: the completions are the reference's within 5% and the trims
    its NACKs within 10% (docs/calibration.md section 9); the rate alone
    (the queue and thresholds left whole) gives a slower tail."""
    from cnsim.validate_uet import DEGRADED, degraded_scenario, uet_fcts

    name = "128-host 1:1, -failed 4 (the 4 core links into F0_0)"
    fabric, n, median, tail, nacks = DEGRADED[name]
    sc = degraded_scenario(fabric, n)
    assert [(e.from_, e.to, e.rate_gbps, e.scale_buffers) for e in sc.model.events] == [
        (f"S0_{j}", "F0_0", 25.0, True) for j in range(4)
    ]
    r = cnsim.run(sc, progress=False)
    f = uet_fcts(r)
    assert f["flows"] == 128
    assert abs(f["median"] - median) <= 0.05 * median
    assert abs(f["tail"] - tail) <= 0.05 * tail
    assert abs(r.metric("frames_trimmed")[0] - nacks) <= 0.10 * nacks
    rate_only = [
        {"at_ms": 0.0, "action": "link_rate", "from": e.from_, "to": e.to, "rate_gbps": 25.0}
        for e in sc.model.events
    ]
    g = uet_fcts(cnsim.run(sc.replace(events=rate_only), progress=False))
    assert g["tail"] > 1.08 * tail
