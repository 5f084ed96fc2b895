"""The event trace (events.parquet) and the packet captures (pcapng) on
whole runs: every captured field is checked against the trace of the same
run, read back with scapy; the trace against the engine's counters; tshark
(when installed) decodes every capture without a malformed frame."""

from __future__ import annotations

import gc
import math
import shutil
import struct
import subprocess
from pathlib import Path

import cnsim
import polars as pl
import pytest
import scapy.contrib.mac_control as mac_control
from scapy.all import IP, UDP, Dot1Q, Ether, rdpcap
from scapy.contrib.roce import AETH, BTH, CNPPadding

TSHARK = shutil.which("tshark")
DISSECTOR = Path(__file__).resolve().parents[1] / "docs" / "wireshark" / "cnsim.lua"


def station_mac(s: int) -> str:
    return f"02:00:00:00:{s >> 8:02x}:{s & 0xFF:02x}"


def port_mac(p: int) -> bytes:
    return bytes([0x02, 0x00, 0x01, (p >> 16) & 0xFF, (p >> 8) & 0xFF, p & 0xFF])


def station_ip(s: int) -> str:
    n = 0x0A000000 + s + 1
    return ".".join(str((n >> k) & 0xFF) for k in (24, 16, 8, 0))


def ns(time_ps: int) -> int:
    return time_ps // 1000


def packets(path: Path) -> list:
    return list(rdpcap(str(path)))


def departures(ev: pl.DataFrame, port: str) -> list[dict]:
    """The frames the trace says left `port`, in order."""
    return ev.filter((pl.col("kind") == "dequeue") & (pl.col("port") == port)).to_dicts()


# ------------------------------------------------------------------ runs


@pytest.fixture(scope="module")
def dcqcn(tmp_path_factory):
    """flows_incast with DCQCN and PFC: every event, both directions of the hot link captured."""
    sc = cnsim.load("flows_incast").replace(
        scheme="dcqcn", **{"trace.events": ["all"], "trace.pcap": ["L0->H0", "H0->L0"]}
    )
    res = cnsim.run(sc, progress=False, trace_dir=tmp_path_factory.mktemp("dcqcn"))
    return res, res.events()


@pytest.fixture(scope="module")
def qcn(tmp_path_factory):
    """singlehop_hotspot with QCN two-point and PAUSE, the hot link stopped early so that
    the bridge pauses its sources; two of its ports captured (cut at 128 bytes)."""
    sc = cnsim.load("singlehop_hotspot").replace(
        scheme="qcn2pt",
        pause=True,
        duration_ms=20,
        **{
            "hotspot.start_ms": 2,
            "hotspot.end_ms": 20,
            "hotspot.rate_gbps": 0.0,
            "trace.events": ["all"],
            "trace.pcap": ["SW->H3", "SW->H7"],
            "trace.snaplen": 128,
        },
    )
    res = cnsim.run(sc, progress=False, trace_dir=tmp_path_factory.mktemp("qcn"))
    return res, res.events()


@pytest.fixture(scope="module")
def bcn(tmp_path_factory):
    sc = cnsim.load("singlehop_hotspot").replace(
        scheme="bcn",
        duration_ms=20,
        **{
            "hotspot.start_ms": 2,
            "hotspot.end_ms": 20,
            "hotspot.rate_gbps": 0.5,
            "trace.events": ["cn_tx", "cn_rx", "dequeue"],
            "trace.pcap": ["SW->H3"],
            "trace.snaplen": 96,
        },
    )
    res = cnsim.run(sc, progress=False, trace_dir=tmp_path_factory.mktemp("bcn"))
    return res, res.events()


# ------------------------------------------------------ the events table


def test_drops_in_the_trace_are_the_drop_counters_by_node_and_reason():
    """The bar: singlehop_hotspot without management and without PAUSE, the
    whole run; every drop is in the trace, at the node that counted it, with
    the reason of its counter."""
    sc = cnsim.load("singlehop_hotspot").replace(scheme="nocm", pause=False, **{"trace.events": ["drop"]})
    res = cnsim.run(sc, progress=False)
    ev = res.events()
    assert set(ev["kind"].unique()) == {"drop"} and set(ev["frame"].unique()) == {"data"}
    got = {(r["node"], r["reason"]): r["len"] for r in ev.group_by("node", "reason").len().to_dicts()}
    nodes = res.nodes
    want = {}
    for r in nodes.to_dicts():
        for col, reason in (
            ("dropped_cp", "input_partition_full"),
            ("dropped_rl", "rlq_full"),
            ("dropped_nic", "nic_full"),
        ):
            if r[col]:
                want[(r["name"], reason)] = r[col]
    assert got == want
    # The published figure: the hot port's excess, 214,569 frames (references.md).
    assert sum(got.values()) == res.runs[0].frames["dropped_cp"] > 200_000
    drops = ev.filter(pl.col("node") == "SW")
    assert (drops["port"] == "SW->H0").all(), "the per-input partitions of the hot output overflow"
    assert (drops["queue_bytes"] + drops["bytes"] > 150_000).all(), "a drop finds its partition full"


def test_a_traced_run_has_the_untraced_runs_results(dcqcn):
    res, _ = dcqcn
    plain = cnsim.run(res.scenario.replace(**{"trace.events": [], "trace.pcap": []}), progress=False)
    assert plain.trace is None
    assert res.summary.equals(plain.summary)
    for table in ("flows", "links", "nodes", "timeseries"):
        assert res.to_polars(table).equals(plain.to_polars(table)), table


def test_the_events_follow_each_frame_from_its_source_to_its_sink(dcqcn):
    res, ev = dcqcn
    assert ev["time_ps"].is_sorted()
    assert ((ev["time_us"] - ev["time_ps"] / 1e6).abs() < 1e-6).all()
    data = ev.filter(pl.col("frame") == "data")
    made = data.filter(pl.col("kind") == "generate").height
    delivered = data.filter(pl.col("kind") == "deliver").height
    assert made == res.runs[0].frames["generated"] and delivered == res.runs[0].frames["delivered"]
    # One frame: made at its source, through two ports (source NIC, leaf), delivered.
    first = data.filter((pl.col("flow") == "H1|H0") & (pl.col("seq") == 0))
    assert first["kind"].to_list() == ["generate", "dequeue", "enqueue", "dequeue", "deliver"]
    assert first["port"].to_list()[1:4] == ["H1->L0", "L0->H0", "L0->H0"]
    # Flows: one start and one end each, an end after its start.
    flows = ev.filter(pl.col("kind").is_in(["flow_start", "flow_end"]))
    assert flows.group_by("flow_id").len()["len"].to_list() == [2] * 16
    # Every CNP a notification point sent reached its sender.
    assert ev.filter(pl.col("kind") == "cn_tx").height == ev.filter(pl.col("kind") == "cn_rx").height > 0
    assert set(ev.filter(pl.col("kind") == "cn_tx")["note"].unique()) == {"CNP"}
    # Rate limiters: each change of a sender's rate is a row (created at line rate).
    rate = ev.filter(pl.col("kind") == "rate")
    assert rate.filter(pl.col("reason") == "created")["rate_gbps"].unique().to_list() == [10.0]
    assert rate.filter(pl.col("rate_gbps") < 10.0).height > 0


def test_filters_keep_exactly_the_rows_they_name(dcqcn):
    """A run with every filter set records the rows of the unfiltered trace
    that pass them all: node, port, flow, kind and time window."""
    res, ev = dcqcn
    sc = res.scenario.replace(
        **{
            "trace.events": ["dequeue", "enqueue", "mark", "cn_tx"],
            "trace.event_nodes": ["L0", "H0"],
            "trace.event_ports": ["L0->H0", "H0->L0"],
            "trace.event_flows": ["H1|H0", "H2|H0"],
            "trace.from_ms": 0.3,
            "trace.to_ms": 2.0,
            "trace.pcap": [],
        }
    )
    got = cnsim.run(sc, progress=False).events()
    want = ev.filter(
        pl.col("kind").is_in(["dequeue", "enqueue", "mark", "cn_tx"])
        & pl.col("node").is_in(["L0", "H0"])
        & pl.col("port").is_in(["L0->H0", "H0->L0"])
        & pl.col("flow").is_in(["H1|H0", "H2|H0"])
        & (pl.col("time_ps") >= 300_000_000)
        & (pl.col("time_ps") < 2_000_000_000)
    )
    assert got.height > 100 and set(got["kind"].unique()) == {"dequeue", "enqueue", "mark", "cn_tx"}
    assert got.equals(want)


def test_pause_on_and_off_rows_add_up_to_the_time_each_port_was_paused(dcqcn, qcn):
    """The trace's pause intervals (an expired pause included, a pause still
    on at the end closed there) are the engine's paused time of each port."""
    checked = 0
    for res, ev in (dcqcn, qcn):
        on = ev.filter(pl.col("kind") == "pause_on").sort("port", "time_ps")
        off = ev.filter(pl.col("kind") == "pause_off").sort("port", "time_ps")
        assert on["port"].to_list() == off["port"].to_list()
        assert (off["time_ps"] > on["time_ps"]).all()
        spans = on.select("port", (off["time_ps"] - on["time_ps"]).alias("ps"))
        per = dict(spans.group_by("port").agg(pl.col("ps").sum()).iter_rows())
        links = {r["name"]: r["paused_ps"] for r in res.links.to_dicts() if r["paused_ps"]}
        assert per == links
        checked += len(per)
        # Every pause_on follows a PAUSE received there, with non-zero quanta.
        rx = ev.filter((pl.col("kind") == "pause_rx") & (pl.col("quanta") > 0))
        assert on.join(rx, on=["port", "time_ps"], how="anti").height == 0
    assert checked >= 2


# ---------------------------------------------------------- DCQCN captures


def test_a_dcqcn_capture_is_rocev2_with_every_field_the_traces(dcqcn):
    res, ev = dcqcn
    [down] = res.pcap_files()[1:]  # L0-to-H0 sorts after H0-to-L0
    assert down.name == "L0-to-H0.seed0.pcapng"
    pk = packets(down)
    rows = departures(ev, "L0->H0")
    link = res.links.filter(pl.col("name") == "L0->H0").row(0, named=True)
    assert len(pk) == len(rows) == link["frames"]
    n_frames = {
        r["flow_id"]: math.ceil(r["bytes"] / 1500)
        for r in ev.filter(pl.col("kind") == "flow_start").to_dicts()
    }
    stations = {f"H{i}": i for i in range(32)}
    psn: dict[int, list[int]] = {}
    for p, r in zip(pk, rows, strict=True):
        assert int(p.time * 10**9) == ns(r["time_ps"])
        assert p.wirelen == r["bytes"] and len(p) == r["bytes"] - 4, "whole frames, FCS not captured"
        src, dst = (stations[x] for x in r["flow"].split("|"))
        assert (p[Ether].src, p[Ether].dst) == (station_mac(src), station_mac(dst))
        assert p[Dot1Q].prio == 3
        assert (p[IP].src, p[IP].dst, p[IP].len) == (station_ip(src), station_ip(dst), r["bytes"] - 22)
        assert p[IP].tos & 3 == (0b11 if r["ecn"] else 0b10), "ECN: CE when marked, else ECT(0)"
        assert p[UDP].dport == 4791
        b = p[BTH]
        assert b.dqpn == 0x100 + r["flow_id"] and b.psn == r["seq"] and b.ackreq == 1
        n, s = n_frames[r["flow_id"]], r["seq"]
        assert b.opcode == (0x00 if s == 0 else 0x02 if s == n - 1 else 0x01), "RC SEND first / middle / last"
        check_icrc(p)
        psn.setdefault(b.dqpn, []).append(b.psn)
    # Lossless (PFC): each flow's PSNs are 0, 1, 2, ... in order.
    assert len(psn) == 16 and all(v == list(range(len(v))) for v in psn.values())
    assert sum(ev.filter(pl.col("kind") == "mark")["port"] == "L0->H0") == sum(r["ecn"] for r in rows) > 0


def test_acks_and_cnps_are_rocev2_acknowledgements_and_cnps(dcqcn):
    res, ev = dcqcn
    up = res.pcap_files()[0]
    pk = packets(up)
    rows = departures(ev, "H0->L0")
    assert len(pk) == len(rows) > 0
    cnps = 0
    for p, r in zip(pk, rows, strict=True):
        assert int(p.time * 10**9) == ns(r["time_ps"])
        assert p[Dot1Q].prio == 6 and p[UDP].dport == 4791
        b = p[BTH]
        assert b.dqpn == 0x100 + r["flow_id"]
        if r["frame"] == "ack":
            assert b.opcode == 0x11 and p[AETH].syndrome == 0x1F and b.psn == r["seq"] - 1
            assert p.wirelen == 70, "a RoCEv2 ACK is longer than the simulation's 64-byte control frame"
        else:
            assert r["frame"] == "note" and r["note"] == "CNP"
            assert b.opcode == 0x81 and b.becn == 1 and CNPPadding in p and p.wirelen == 82
            cnps += 1
        check_icrc(p)
    assert cnps == (ev.filter(pl.col("kind") == "cn_tx").height) > 0


def check_icrc(p) -> None:
    """The packet's ICRC is the one scapy computes for it."""
    raw = bytes(p)
    q = Ether(raw)
    q[BTH].icrc = None
    assert bytes(q)[-4:] == raw[-4:], "ICRC"


# ------------------------------------------------------------ QCN captures


def test_pause_frames_on_a_port_are_the_engines_counter_and_carry_the_traces_quanta(qcn):
    res, ev = qcn
    links = {r["name"]: r for r in res.links.to_dicts()}
    total = 0
    for f in res.pcap_files():
        port = f.name.split(".")[0].replace("-to-", "->")
        pauses = [p for p in packets(f) if p[Ether].type == 0x8808]
        rows = [r for r in departures(ev, port) if r["frame"] == "pause"]
        assert len(pauses) == len(rows) == links[port]["pause_frames"]
        for p, r in zip(pauses, rows, strict=True):
            assert p[Ether].dst == "01:80:c2:00:00:01"
            assert bytes.fromhex(p[Ether].src.replace(":", "")) == port_mac(p_id(res, port)), (
                "from the pausing port"
            )
            assert p[mac_control.MACControlPause].pause_time == r["quanta"]
            assert int(p.time * 10**9) == ns(r["time_ps"]) and p.wirelen == 64
        total += len(pauses)
    assert total > 0


def p_id(res, port: str) -> int:
    """The engine's id of `port` (ports are numbered in link order, both directions)."""
    return res.links["name"].to_list().index(port)


def test_every_cnm_field_is_the_traces(qcn):
    res, ev = qcn
    ports = res.links["name"].to_list()
    n_cnm = 0
    for f in res.pcap_files():
        port = f.name.split(".")[0].replace("-to-", "->")
        rows = departures(ev, port)
        pk = packets(f)
        assert len(pk) == len(rows)
        for p, r in zip(pk, rows, strict=True):
            assert int(p.time * 10**9) == ns(r["time_ps"])
            if r["frame"] == "data":
                src, dst = (int(x[1:]) for x in r["flow"].split("|"))
                assert p[Dot1Q].prio == 3 and p[Dot1Q].type == 0x22E9
                tag = bytes(p[Dot1Q].payload)
                assert struct.unpack(">HH", tag[:4]) == (dst + 1, 0x88B5), (
                    "CN-TAG flow id, then the payload's type"
                )
                assert p.wirelen == 1500 and len(p) == 128
            elif r["frame"] == "note":
                n_cnm += 1
                check_cnm(p, r, ports)
    assert n_cnm > 0
    assert ev.filter(pl.col("kind") == "cn_tx")["note"].unique().to_list() == ["CNM"]


def units64(x: float) -> int:
    """`x` bytes in 64-octet units, rounded half away from zero, saturated to 16 bits."""
    n = math.floor(abs(x) / 64 + 0.5) * (1 if x >= 0 else -1)
    return max(-32768, min(32767, n))


def check_cnm(p, r: dict, ports: list[str]) -> None:
    src, dst = (int(x[1:]) for x in r["flow"].split("|"))
    assert p[Ether].dst == station_mac(src), "to the sampled frame's source"
    cp = ports.index(r["cp"])
    assert bytes.fromhex(p[Ether].src.replace(":", "")) == port_mac(cp), "from the CP"
    assert p[Dot1Q].prio == 6 and p[Dot1Q].type == 0x22E9
    b = bytes(p[Dot1Q].payload)
    flow_id, etype, head = struct.unpack(">HHH", b[:6])
    assert (flow_id, etype) == (dst + 1, 0x22E7)
    assert head >> 12 == 0 and head & 0x3F == r["fb"], "version 0, quantized feedback"
    cpid = b[6:14]
    assert cpid[:6] == port_mac(cp) and struct.unpack(">H", cpid[6:])[0] == r["cpid"] == cp + 1
    qoff, qdelta, prio = struct.unpack(">hhH", b[14:20])
    assert (qoff, qdelta) == (units64(r["qoff"]), units64(r["qdelta"])), "64-octet units"
    assert prio >> 13 == 3
    assert b[20:26] == bytes.fromhex(station_mac(dst).replace(":", "")), "encapsulated destination"
    (msdu_len,) = struct.unpack(">H", b[26:28])
    assert msdu_len == 14 and b[28:30] == b"\x88\xb5", "the sampled frame's first bytes, as many as fit"
    assert p.wirelen == 64 and len(p) == 60


def half_away(x: float) -> int:
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def test_bcn_messages_carry_cpid_qoff_qdelta_and_fb(bcn):
    res, ev = bcn
    [f] = res.pcap_files()
    rows = departures(ev, "SW->H3")
    pk = packets(f)
    assert len(pk) == len(rows)
    sent = {(r["born_ps"], r["flow"]): r for r in ev.filter(pl.col("kind") == "cn_tx").to_dicts()}
    ports = res.links["name"].to_list()
    seen = 0
    for p, r in zip(pk, rows, strict=True):
        if r["frame"] != "note":
            continue
        seen += 1
        tx = sent[(r["born_ps"], r["flow"])]
        assert p[Dot1Q].type == 0x8904
        b = bytes(p[Dot1Q].payload)
        assert b[:2] == b"\x00\x00" and b[2:8] == port_mac(ports.index(tx["cp"]))
        qoff, qdelta = struct.unpack(">hh", b[10:14])
        (fb,) = struct.unpack(">f", b[14:18])
        stop = tx["note"] == "BCN(0,0)"
        assert (qoff, qdelta) == ((0, 0) if stop else (half_away(tx["qoff"]), half_away(tx["qdelta"])))
        assert fb == pytest.approx(tx["fb"], rel=1e-6) and fb == r["fb"]
        assert b[22:28] == bytes.fromhex(station_mac(int(tx["flow"].split("|")[1][1:])).replace(":", ""))
    assert seen > 0


# ----------------------------------------------------------------- tshark


def tshark(*args: str) -> str:
    return subprocess.run(["tshark", *args], capture_output=True, text=True, timeout=300, check=True).stdout


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian: apt-get install tshark)")
def test_tshark_decodes_every_capture_without_a_malformed_frame(dcqcn, qcn, bcn):
    files = [f for res, _ in (dcqcn, qcn, bcn) for f in res.pcap_files()]
    for f in files:
        out = tshark("-r", str(f))
        assert out.strip() and "Malformed" not in out, f.name
        assert tshark("-r", str(f), "-Y", "_ws.malformed || _ws.expert.severity >= error").strip() == "", (
            f.name
        )
    dcqcn_up = str(dcqcn[0].pcap_files()[0])
    cnps = dcqcn[1].filter(pl.col("kind") == "cn_tx").height
    assert len(tshark("-r", dcqcn_up, "-Y", "infiniband.bth.opcode == 0x81").splitlines()) == cnps
    pauses = sum(dcqcn[0].links["pause_frames"]) + sum(qcn[0].links["pause_frames"])
    assert pauses > 0
    qcn_pauses = sum(
        len(tshark("-r", str(f), "-Y", "macc.opcode == 0x0001").splitlines()) for f in qcn[0].pcap_files()
    )
    assert qcn_pauses == sum(
        r["pause_frames"] for r in qcn[0].links.to_dicts() if r["name"] in ("SW->H3", "SW->H7")
    )


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian: apt-get install tshark)")
def test_the_wireshark_dissector_of_docs_decodes_cn_tags_cnms_and_bcn(qcn, bcn):
    lua = ("-X", f"lua_script:{DISSECTOR}")
    res, ev = qcn
    for f in res.pcap_files():
        port = f.name.split(".")[0].replace("-to-", "->")
        fb = [r["fb"] for r in departures(ev, port) if r["frame"] == "note"]
        out = tshark(*lua, "-r", str(f), "-Y", "cnm", "-T", "fields", "-e", "cnm.qntzfb")
        assert [int(x) for x in out.split()] == fb
        tags = tshark(*lua, "-r", str(f), "-Y", "cn-tag", "-T", "fields", "-e", "cn-tag.flowid")
        assert len(tags.split()) == len(departures(ev, port)) - sum(
            1 for r in departures(ev, port) if r["frame"] == "pause"
        )
        assert "Malformed" not in tshark(*lua, "-r", str(f))
    res, ev = bcn
    [f] = res.pcap_files()
    fb = [r["fb"] for r in departures(ev, "SW->H3") if r["frame"] == "note"]
    out = tshark(*lua, "-r", str(f), "-Y", "bcn", "-T", "fields", "-e", "bcn.fb")
    assert [float(x) for x in out.split()] == pytest.approx(fb, rel=1e-5)  # tshark prints 6 digits


# ------------------------------------------------------------ files, API


def test_saving_puts_events_and_captures_in_the_results_directory(tmp_path):
    sc = cnsim.load("flows_incast").replace(
        scheme="dcqcn", seeds=[0, 1], **{"trace.events": ["pause_tx", "cn_tx"], "trace.pcap": ["L0->H0"]}
    )
    res = cnsim.run(sc, progress=False)
    staging = res.trace.root
    assert staging.is_dir() and len(res.pcap_files()) == 2
    ev = res.events()
    assert sorted(ev["seed"].unique()) == [0, 1]
    out = res.save(tmp_path / "r")
    assert (out / "events.parquet").is_file()
    assert sorted(p.name for p in (out / "pcap").iterdir()) == [
        "L0-to-H0.seed0.pcapng",
        "L0-to-H0.seed1.pcapng",
    ]
    back = cnsim.open_results(out)
    assert back.events().equals(ev)
    assert [p.name for p in back.pcap_files(seed=1)] == ["L0-to-H0.seed1.pcapng"]
    assert back.events(seed=1).equals(ev.filter(pl.col("seed") == 1))
    # The temporary directory of the run goes with its Results.
    del res, back
    gc.collect()
    assert not staging.exists()


def test_the_cli_writes_the_trace_into_out_and_warns_at_the_row_cap(cli, tmp_path):
    out = tmp_path / "r"
    p = cli(
        "run", "flows_incast", "--scheme", "dcqcn", "--pcap", "L0->H0", "--out", str(out), "--no-report",
        "--set", 'trace.events=["dequeue"]', "--set", "trace.max_rows=1000",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in out.iterdir() if "parquet" in x.name or x.is_dir()) == [
        "events.parquet", "flows.parquet", "links.parquet", "nodes.parquet", "pairs.parquet", "pcap",
        "queues.parquet", "runs.parquet", "timeseries.parquet", "windows.parquet",
    ]  # fmt: skip
    assert pl.read_parquet(out / "events.parquet").height == 1000
    warning = [line for line in p.stderr.splitlines() if "trace.max_rows" in line]
    assert len(warning) == 1 and "first 1,000 rows" in warning[0], p.stderr
    assert "events:" in p.stdout and "captures:" in p.stdout
    # --force replaces a directory holding a trace.
    q = cli("run", "flows_incast", "--scheme", "dcqcn", "--out", str(out), "--force", "--no-report")
    assert q.returncode == 0, q.stderr
    assert not (out / "events.parquet").exists() and not (out / "pcap").exists()


def test_the_api_warns_when_a_trace_reaches_its_row_cap():
    sc = cnsim.load("flows_incast").replace(scheme="dcqcn", **{"trace.events": ["all"], "trace.max_rows": 50})
    from cnsim.trace import TraceCapWarning

    with pytest.warns(TraceCapWarning, match="seed 0's events.parquet holds its first 50 rows"):
        res = cnsim.run(sc, progress=False)
    assert res.events().height == 50


@pytest.mark.parametrize(
    "sets, message",
    [
        (['trace.event_ports=["L0->H0"]'], "trace.event_ports: set, but trace.events is empty"),
        (['trace.events=["drop"]', "trace.from_ms=60"], "trace.from_ms: 60 ms is not before the run's end"),
    ],
)
def test_a_trace_that_records_nothing_is_warned_of(cli, tmp_path, sets, message):
    args = [x for s in sets for x in ("--set", s)]
    p = cli("run", "flows_incast", "--scheme", "dcqcn", "--out", str(tmp_path / "r"), "--no-report", *args)
    assert p.returncode == 0, p.stderr
    warned = [line for line in p.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1 and message in warned[0], p.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", 'trace.events=["drops"]'], "trace.events"),
        (["--pcap", "H0->H1"], "trace.pcap: 'H0->H1' is not a link direction"),
        (["--set", 'trace.event_flows=["H1-H0"]'], "trace.event_flows: 'H1-H0' is not allowed"),
        (["--set", 'trace.event_nodes=["X"]'], "trace.event_nodes: 'X' is not allowed"),
        (["--set", "trace.snaplen=10"], "trace.snaplen"),
        (
            ["--set", "trace.from_ms=5", "--set", "trace.to_ms=5"],
            "trace.from_ms / trace.to_ms: 5 / 5 not allowed; expected from_ms < to_ms",
        ),
    ],
)
def test_bad_trace_settings_exit_2_with_one_line(cli, tmp_path, args, message):
    p = cli("run", "flows_incast", "--scheme", "dcqcn", "--out", str(tmp_path / "r"), *args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], p.stderr
    assert not (tmp_path / "r").exists()
