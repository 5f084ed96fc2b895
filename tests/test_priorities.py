"""Eight priorities (issue 40): a station's 802.1p priority, and how a
bridge port's transmission selection (strict priority, then ETS by weight)
shares the port among the classes; bad values refused naming the parameter."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import cnsim
import polars as pl
import pytest


def _two_classes(**bridge: Any) -> dict[str, Any]:
    """S1 (priority 0) and S2 (priority 3) at line rate into D through B: B's
    port to D is the bottleneck; its buffer is unbounded so that both classes
    stay backlogged and the scheduler alone decides the shares (the scenario
    `cnsim validate --only multiclass` uses)."""
    from cnsim.classes_cases import _two_classes as two

    return two(**bridge)


def _shares(doc: dict[str, Any]) -> tuple[float, float]:
    r = cnsim.run(cnsim.Scenario(doc))
    return r.metric("throughput_priority_0")[0], r.metric("throughput_priority_3")[0]


@pytest.mark.parametrize("w0,w3", [(1, 3), (1, 1), (4, 1)])
def test_ets_shares_a_port_by_weight_within_five_percent(w0, w3):
    weights = [1] * 8
    weights[0], weights[3] = w0, w3
    p0, p3 = _shares(_two_classes(ets_weights=weights))
    assert p3 / p0 == pytest.approx(w3 / w0, rel=0.05)
    assert p0 + p3 == pytest.approx(10.0, rel=0.01), "the port stays busy"


def test_strict_priority_starves_the_lower_class_whichever_it_is():
    p0, p3 = _shares(_two_classes(strict_priorities=[0]))
    assert p3 < 0.01 * p0 and p0 == pytest.approx(10.0, rel=0.01)
    # A node may set its own: B serves 3 strictly, over [bridge]'s 0.
    doc = _two_classes(strict_priorities=[0])
    doc["nodes"][3]["strict_priorities"] = [3]
    p0, p3 = _shares(doc)
    assert p0 < 0.01 * p3


def test_one_priority_gives_no_per_priority_metrics_and_the_same_results():
    doc = _two_classes(ets_weights=[1, 1, 1, 9, 1, 1, 1, 1])
    doc["nodes"][0]["priority"] = 3
    a = cnsim.run(cnsim.Scenario(doc))
    doc["bridge"] = {"buffer_mode": "infinite"}
    b = cnsim.run(cnsim.Scenario(doc))
    assert not any(k.startswith("throughput_priority") for k in a.stats)
    assert a.per_seed == b.per_seed


def test_priority_is_saved_with_the_scenario(tmp_path):
    doc = _two_classes(ets_weights=[2, 1, 1, 1, 1, 1, 1, 1], strict_priorities=[6])
    cnsim.run(cnsim.Scenario(doc)).save(tmp_path / "r")
    text = (tmp_path / "r" / "scenario.toml").read_text()
    assert "priority = 0" in text and "ets_weights = [2, 1, 1, 1, 1, 1, 1, 1]" in text
    assert "strict_priorities = [6]" in text


@pytest.mark.parametrize(
    "setting,named",
    [
        ("nodes.S1.priority=8", "nodes.S1.priority"),
        ("station.priority=-1", "station.priority"),
        ("bridge.ets_weights=[0,0,0,0,0,0,0,0]", "ets_weights not all 0"),
        ("bridge.ets_weights=[1,2]", "array of 8 integers"),
        ("bridge.ets_weights=[1,1,1,1,1,1,1,1001]", "bridge.ets_weights[7]"),
        ("bridge.strict_priorities=[9]", "bridge.strict_priorities[0]"),
        ("bridge.strict_priorities=[1,1]", "strict_priorities distinct"),
        ("nodes.B.ets_weights=[0,0,0,0,0,0,0,0]", "nodes.B.ets_weights"),
        ("pause.lossless=[8]", "pause.lossless[0]"),
        ("pause.mode=pfc --set pause.lossless=[]", "a lossless priority with mode = pfc"),
        ("pause.mode=pfc --set pause.trigger=output_queue", "trigger auto or ingress"),
        ("pause.mode=pcf", "pause.mode"),
    ],
)
def test_bad_priorities_and_weights_exit_2_naming_the_parameter(tmp_path, setting, named, refused):
    f = tmp_path / "s.toml"
    import tomli_w

    f.write_text(tomli_w.dumps(_two_classes()))
    lines = refused(tmp_path, f, *f"--set {setting}".split())
    assert len(lines) == 1 and named in lines[0], lines
    assert not Path(tmp_path / "o").exists()


def _pfc(**pause: Any) -> dict[str, Any]:
    """S1 (priority 3) and S2 (priority 0) at line rate into D, per-input
    buffers of 150 KB, both stopping at 3 ms and drained by 5 ms."""
    doc = _two_classes()
    doc["bridge"] = {"buffer_mode": "per_input"}
    doc["nodes"][0]["priority"] = 3
    doc["nodes"][1]["priority"] = 0
    for n in doc["nodes"][:2]:
        n["stop_ms"] = 3.0
    doc["measure"] = {"start_ms": 0.5, "end_ms": 2.5}
    doc["stats"] = {"per_flow": True}
    doc["pause"] = {"enabled": True, "xoff_bytes": 50_000, "xon_bytes": 40_000, **pause}
    return doc


def test_pfc_keeps_the_lossless_priority_lossless_and_never_pauses_the_lossy_one():
    r = cnsim.run(cnsim.Scenario(_pfc(mode="pfc", lossless=[3])))
    flows = {row["src"]: row for row in r.flows.iter_rows(named=True)}
    assert flows["S1"]["generated"] == flows["S1"]["delivered"], "lossless"
    lost = flows["S2"]["generated"] - flows["S2"]["delivered"]
    assert lost > 500 and r.metric("dropped_cp")[0] == lost, "every drop is the lossy class's"
    assert r.metric("pfc_frames_priority_3")[0] > 10 and r.metric("pfc_frames_priority_0")[0] == 0
    assert r.metric("time_paused_ms_priority_3")[0] > 0.5 and r.metric("time_paused_ms_priority_0")[0] == 0
    # Equal ETS weights: half the port each while both are backlogged.
    assert r.metric("throughput_priority_3")[0] == pytest.approx(5.0, rel=0.05)
    # 802.3x PAUSE instead stops the lossy station too; with no lossless
    # priority in use, PFC pauses nothing (and says so).
    r = cnsim.run(cnsim.Scenario(_pfc(mode="pause")))
    assert r.metric("dropped_cp")[0] == 0
    with pytest.warns(cnsim.ScenarioWarning, match="no station sends at a lossless priority"):
        r = cnsim.run(cnsim.Scenario(_pfc(mode="pfc", lossless=[5])))
    assert r.metric("pfc_frames_priority_3")[0] == 0


def test_a_pfc_storm_stops_only_its_priority_and_the_watchdog_drops_and_restores_it():
    """SONiC's storm test (scenario pfc_storm): during the storm the stormed
    lossless priority receives 0% and the lossy background loses 0%; the
    watchdog storms the queue once, drops its frames, and after the storm
    restores it: H1's traffic is back in the `after` window."""
    r = cnsim.run(cnsim.load("pfc_storm"))
    assert r.metric("throughput_priority_3")[0] < 0.01
    assert r.metric("throughput_priority_0")[0] == pytest.approx(4.5, rel=0.05)
    assert r.metric("watchdog_storms_priority_3")[0] == 1
    drops = r.metric("watchdog_drops_priority_3")[0]
    assert drops > 10_000 and r.metric("dropped_cp")[0] == drops, "only the stormed queue loses frames"
    after = {row["src"]: row["throughput_gbps_after"] for row in r.flows.iter_rows(named=True)}
    assert after["H1"] == pytest.approx(4.5, rel=0.05) and after["H3"] == pytest.approx(4.5, rel=0.05)
    # Without the watchdog the storm holds H1 paused and nothing is dropped.
    doc = copy.deepcopy(cnsim.load("pfc_storm").raw)
    doc["pause"]["watchdog"] = False
    r = cnsim.run(cnsim.Scenario(doc))
    assert r.metric("dropped_cp")[0] == 0 and r.metric("throughput_priority_3")[0] < 0.01
    links = {row["name"]: row for row in r.links.iter_rows(named=True)}
    assert links["H1->B"]["paused_ps"] > 40e9, "paused through most of the 50 ms window"


def _storm_event(**change: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        doc["events"][0].update(change)

    return edit


def _pause(**change: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        doc["pause"].update(change)

    return edit


@pytest.mark.parametrize(
    "edit,named",
    [
        (_storm_event(priority=9), "events[0].priority"),
        (_storm_event(node="B"), "events[0].node"),
        (_storm_event(until_ms=10.0), "until_ms >= at_ms"),
        (_storm_event(action="pfc_strom"), "events[0].action"),
        (_pause(mode="pause"), "the watchdog with mode = pfc"),
        (_pause(watchdog_detection_ms=0), "pause.watchdog_detection_ms"),
        (_pause(watchdog_action="ignore"), "pause.watchdog_action"),
    ],
)
def test_bad_storms_and_watchdogs_exit_2_naming_the_parameter(tmp_path, edit, named, refused):
    import tomli_w

    doc = copy.deepcopy(cnsim.load("pfc_storm").raw)
    edit(doc)
    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(doc))
    lines = refused(tmp_path, f)
    assert len(lines) == 1 and named in lines[0], lines


def test_a_storm_on_a_lossy_priority_warns_and_pauses_nothing():
    doc = copy.deepcopy(cnsim.load("pfc_storm").raw)
    doc["duration_ms"] = 30.0
    doc["events"][0]["priority"] = 0
    doc["measure"] = {"start_ms": 0.0, "end_ms": 30.0}
    doc.pop("windows", None)
    with pytest.warns(cnsim.ScenarioWarning, match="not lossless"):
        r = cnsim.run(cnsim.Scenario(doc))
    assert r.metric("pfc_frames_priority_0")[0] > 0 and r.metric("time_paused_ms_priority_0")[0] == 0


def test_validate_multiclass_passes():
    """`cnsim validate --only multiclass`: every check within tolerance."""
    import json

    p = subprocess.run(
        [sys.executable, "-m", "cnsim", "validate", "--only", "multiclass", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert len(rows) == 21 and all(r["within"] for r in rows), rows


def test_an_mmu_with_auto_headroom_keeps_the_lossless_priority_lossless():
    """The shared-buffer switch in its worst headroom pattern
    (docs/classes.md, "Headroom"): `auto` loses no lossless frame and the
    pattern fills more than 90% of it; the lossy priority is never paused."""
    from cnsim.classes_cases import headroom_case

    doc = headroom_case(100, 100.0, 1500)
    r = cnsim.run(cnsim.Scenario(doc))
    import cnsim._core as _core

    auto = _core.pause_headroom_bytes(100, 0.5, doc["bridge"]["latency_us"], 1500, 64, 1)
    assert r.metric("headroom_drops_priority_3")[0] == 0
    assert 0.9 * auto < r.metric("headroom_peak_bytes_priority_3")[0] <= auto
    assert r.metric("pfc_frames_priority_3")[0] > 40 and r.metric("pfc_frames_priority_0")[0] == 0
    doc = headroom_case(100, 100.0, 1500, headroom=auto * 9 // 10)
    assert cnsim.run(cnsim.Scenario(doc)).metric("headroom_drops_priority_3")[0] > 0


def test_an_mmu_caps_a_lossy_queue_at_its_egress_threshold():
    """Two lossy stations at line rate into one port of an mmu bridge: the
    queue stops at egress_alpha x the free pool and the rest is dropped
    (buffer_drops), nothing paused; a larger alpha holds more."""
    doc = _two_classes()
    doc["bridge"] = {"buffer_mode": "mmu", "buffer_bytes": 100_000}
    for n in doc["nodes"][:2]:
        n["priority"] = 0
    doc["stats"] = {"per_flow": True}
    doc["nodes"][0]["priority"] = 1  # two lossy priorities: per-priority counters
    drops = {}
    for alpha in (0.5, 4.0):
        doc["bridge"]["egress_alpha"] = alpha
        r = cnsim.run(cnsim.Scenario(doc))
        drops[alpha] = r.metric("buffer_drops_priority_0")[0] + r.metric("buffer_drops_priority_1")[0]
        assert drops[alpha] == r.metric("dropped_cp")[0] > 0
        assert r.metric("pfc_frames_priority_0")[0] == 0
    assert drops[4.0] < drops[0.5]


@pytest.mark.parametrize(
    "setting,named",
    [
        (
            "bridge.buffer_mode=mmu --set bridge.headroom_bytes=200000",
            "bridge.reserve_bytes / bridge.headroom_bytes",
        ),
        (
            "bridge.buffer_mode=mmu --set bridge.reserve_bytes=100000",
            "bridge.reserve_bytes / bridge.headroom_bytes",
        ),
        ("bridge.buffer_mode=mmu --set pause.mode=pause", "pause.mode"),
        ("bridge.headroom_bytes=lots", "bridge.headroom_bytes"),
        ("bridge.headroom_bytes=-1", "bridge.headroom_bytes"),
        ("bridge.ingress_alpha=0", "bridge.ingress_alpha"),
        ("links.S1-B.cable_m=10 --set links.S1-B.delay_us=1", "delay_us or cable_m, not both"),
        ("links.S1-B.cable_m=-3", "cable_m"),
        ("bridge.ecn_kmin_bytes=5000", "ecn_kmin_bytes and ecn_kmax_bytes both set or both not"),
        ("bridge.ecn_kmin_bytes=9000 --set bridge.ecn_kmax_bytes=5000", "ecn_kmin_bytes <= ecn_kmax_bytes"),
        (
            "bridge.ecn_kmin_bytes=1 --set bridge.ecn_kmax_bytes=2 --set bridge.ecn_pmax=1.5",
            "bridge.ecn_pmax",
        ),
    ],
)
def test_bad_buffer_settings_exit_2_naming_the_parameter(tmp_path, setting, named, refused):
    import tomli_w

    doc = _pfc(mode="pfc", lossless=[3])
    doc["bridge"]["buffer_bytes"] = 150_000
    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(doc))
    lines = refused(tmp_path, f, *f"--set {setting}".split())
    assert len(lines) == 1 and named in lines[0], lines


def test_a_bridges_red_profile_reaches_the_engine_and_warns_without_ecn():
    """bridge.ecn_kmin_bytes / ecn_kmax_bytes / ecn_pmax: the bridge's own RED
    profile in the engine config (none: the scheme's, `red` null); under a
    scheme that marks no ECN the run says it is ignored. (What it marks:
    crates/cnsim-core/tests/red.rs.)"""
    doc = _two_classes()
    assert cnsim.Scenario(doc).engine_config()["bridges"][0]["red"] is None
    doc["bridge"].update(ecn_kmin_bytes=5_000, ecn_kmax_bytes=200_000, ecn_pmax=0.01)
    red = cnsim.Scenario(doc).engine_config()["bridges"][0]["red"]
    assert red == {"kmin_bytes": 5_000.0, "kmax_bytes": 200_000.0, "pmax": 0.01}
    # A port's own thresholds, with the bridge's ecn_pmax.
    doc["ports"] = [{"port": "B->D", "ecn_kmin_bytes": 1_000, "ecn_kmax_bytes": 2_000}]
    (port,) = cnsim.Scenario(doc).engine_config()["port_overrides"]
    assert port["red"] == {"kmin_bytes": 1_000.0, "kmax_bytes": 2_000.0, "pmax": 0.01}
    with pytest.warns(cnsim.ScenarioWarning, match="the scheme marks no ECN; the RED profile is ignored"):
        cnsim.run(cnsim.Scenario(doc))


def test_cable_length_sets_the_propagation_delay():
    """A 200 m cable is 1 us each way (5 ns per metre), as delay_us = 1."""
    doc = _two_classes()
    doc["links"][0]["cable_m"] = 200.0
    a = cnsim.Scenario(doc).engine_config()
    doc["links"][0].pop("cable_m")
    doc["links"][0]["delay_us"] = 1.0
    b = cnsim.Scenario(doc).engine_config()
    assert a["links"][0]["delay_ps"] == b["links"][0]["delay_ps"] == 1_000_000


def test_the_deadlock_scenario_deadlocks_names_its_cycle_and_the_watchdog_breaks_it(tmp_path):
    """pfc_deadlock: a cyclic buffer dependency on a 3-bridge ring stops
    every flow for good (aggregate throughput 0 in 30-50 ms); the detector
    names the cycle of paused ports in the counters, summary.json and the
    event trace, with its time. The watchdog (forward) breaks it."""
    import json

    sc = cnsim.load("pfc_deadlock").replace(**{"trace.events": ["deadlock"]})
    r = cnsim.run(sc)
    assert r.metric("aggregate_throughput")[0] == 0.0
    assert r.metric("deadlocks")[0] == 1 and 0 < r.metric("deadlock_at_ms")[0] <= 5.0
    (d,) = r.deadlocks()
    assert d["cycle"] == "priority 3: B0->B1, B1->B2, B2->B0"
    ev = r.events()
    rows = ev.filter(ev["kind"] == "deadlock")
    assert sorted(rows["port"].to_list()) == ["B0->B1", "B1->B2", "B2->B0"]
    assert set(rows["priority"].to_list()) == {3}
    assert set(rows["time_ps"].to_list()) == {round(d["at_ms"] * 1e9)}
    r.save(tmp_path / "o")
    saved = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert saved["deadlocks"][0]["cycle"] == d["cycle"]
    w = cnsim.run(cnsim.load("pfc_deadlock").replace(**{"pause.watchdog": True}))
    assert w.metric("aggregate_throughput")[0] == pytest.approx(15.0, rel=0.05)
    assert w.metric("watchdog_storms_priority_3")[0] >= 3


def test_the_deadlock_detector_only_reads_the_network():
    """With the detector off the run is the same, frame for frame; the
    counters just leave out what it found."""
    on = cnsim.run(cnsim.load("pfc_deadlock"))
    off = cnsim.run(cnsim.load("pfc_deadlock").replace(**{"pause.deadlock_detector": False}))
    assert "deadlocks" not in off.runs[0].frames
    for k in ("generated", "delivered", "deferred", "dropped_cp"):
        assert on.runs[0].frames[k] == off.runs[0].frames[k], k
    assert on.runs[0].table("links")["paused_ps"] == off.runs[0].table("links")["paused_ps"]


def test_no_deadlock_without_a_cycle():
    """The same ring with shortest-path routes (no flow goes the long way):
    PFC pauses, but no cycle forms and nothing deadlocks."""
    doc = copy.deepcopy(cnsim.load("pfc_deadlock").raw)
    doc.pop("routes")
    r = cnsim.run(cnsim.Scenario(doc))
    assert r.metric("deadlocks")[0] == 0 and r.metric("deadlock_at_ms")[0] is None
    assert r.metric("aggregate_throughput")[0] > 25.0
    assert r.deadlocks() == []


def _diamond() -> dict[str, Any]:
    """S -> B0 -> {B1, B2} -> B3 -> D at half line rate; shortest-path
    routing takes B1 (the lower port) while it is up."""
    bridge = [{"name": n, "kind": "bridge"} for n in ("B0", "B1", "B2", "B3")]
    return {
        "name": "diamond",
        "duration_ms": 10.0,
        "measure": {"start_ms": 0.5, "end_ms": 2.0},
        "windows": {"down": {"start_ms": 3.0, "end_ms": 6.0}, "back": {"start_ms": 7.0, "end_ms": 10.0}},
        "stats": {"per_flow": True},
        "nodes": [
            {"name": "S", "kind": "station", "load": 0.5, "dest": "D"},
            {"name": "D", "kind": "station"},
            *bridge,
        ],
        "links": [
            {"a": "S", "b": "B0"},
            {"a": "B0", "b": "B1"},
            {"a": "B0", "b": "B2"},
            {"a": "B1", "b": "B3"},
            {"a": "B2", "b": "B3"},
            {"a": "B3", "b": "D"},
        ],
        "events": [{"at_ms": 2.5, "action": "link_down", "from": "B0", "to": "B1", "until_ms": 6.5}],
    }


def test_a_link_going_down_reroutes_around_it_and_back():
    """While B0-B1 is down the flow goes through B2 and is delivered in
    full; once it is back, through B1 again. Frames queued on the dead link
    wait there (in flight), counted, never lost without a word."""
    r = cnsim.run(cnsim.Scenario(_diamond()))
    flows = r.flows.row(0, named=True)
    for w in ("measure", "down", "back"):
        assert flows[f"throughput_gbps_{w}"] == pytest.approx(5.0, rel=0.08), w  # Bernoulli at 0.5
    links = {row["name"]: row for row in r.links.iter_rows(named=True)}
    via = {
        w: (links["B0->B1"][f"bytes_{w}"], links["B0->B2"][f"bytes_{w}"]) for w in ("measure", "down", "back")
    }
    assert via["measure"][1] == via["down"][0] == via["back"][1] == 0, via
    assert min(via["measure"][0], via["down"][1], via["back"][0]) > 0, via
    assert r.metric("dropped_cp")[0] == 0
    # With no end to the failure the flow stays on B2 to the end.
    doc = _diamond()
    del doc["events"][0]["until_ms"]
    r = cnsim.run(cnsim.Scenario(doc))
    assert r.flows.row(0, named=True)["throughput_gbps_back"] == pytest.approx(5.0, rel=0.08)


@pytest.mark.parametrize(
    "event,named",
    [
        ({"at_ms": 1.0, "action": "link_down", "from": "B0"}, "a link_down event names from and to"),
        ({"at_ms": 1.0, "action": "link_down", "from": "B0", "to": "B3"}, "'B0->B3' is not a link direction"),
        (
            {"at_ms": 2.0, "action": "link_down", "from": "B0", "to": "B1", "until_ms": 1.0},
            "until_ms >= at_ms",
        ),
    ],
)
def test_bad_link_down_events_exit_2_naming_the_event(tmp_path, event, named, refused):
    import tomli_w

    doc = _diamond()
    doc["events"] = [event]
    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(doc))
    lines = refused(tmp_path, f)
    assert len(lines) == 1 and named in lines[0] and "events[0]" in lines[0], lines


def test_the_report_draws_classes_for_a_multi_class_run_only(tmp_path):
    """classes.png: throughput and paused fraction per priority, in runs
    with more than one priority or PFC; none in a single-class run."""
    from cnsim.report import figures

    with pytest.warns(cnsim.ScenarioWarning, match="clipped"):
        sc = cnsim.load("pfc_storm").replace(duration_ms=40.0)
    fig = figures.classes_fig(cnsim.run(sc))
    top, bottom = fig.axes
    assert [ln.get_label() for ln in top.lines] == ["priority 0", "priority 3"]
    assert [ln.get_label() for ln in bottom.lines] == ["priority 3 (lossless)"]
    paused = bottom.lines[0].get_ydata()
    assert max(paused) == pytest.approx(1.0) and paused[5] == 0.0  # paused once the storm starts at 20 ms
    assert figures.classes_fig(cnsim.run(cnsim.Scenario(_two_classes(strict_priorities=[3])))) is not None
    one = _two_classes()
    one["nodes"][0]["priority"] = 3
    assert figures.classes_fig(cnsim.run(cnsim.Scenario(one))) is None


def test_a_port_scheduler_overrides_its_bridges(tmp_path):
    """`[[ports]]`: B->D's own ETS weights (1:3) over the bridge's (1:1),
    saved with the scenario and read back."""
    doc = _two_classes()
    doc["ports"] = [{"port": "B->D", "ets_weights": [1, 1, 1, 3, 1, 1, 1, 1]}]
    sc = cnsim.Scenario(doc)
    p0, p3 = _shares(doc)
    assert p3 / p0 == pytest.approx(3.0, rel=0.05)
    f = tmp_path / "s.toml"
    f.write_text(sc.to_toml())
    assert cnsim.load(str(f)).model.ports[0].ets_weights == [1, 1, 1, 3, 1, 1, 1, 1]


@pytest.mark.parametrize(
    "entry,named",
    [
        ({"port": "D->B", "ets_weights": [1] * 8}, "ports[0].port"),
        ({"port": "B->X", "ets_weights": [1] * 8}, "ports[0].port"),
        ({"port": "B->D", "ets_weights": [0] * 8}, "ets_weights not all 0"),
        ({"port": "B->D", "strict_priorities": [9]}, "ports[0].strict_priorities[0]"),
        ({"ets_weights": [1] * 8}, "ports[0].port"),
        ({"port": "B->D", "ecn_kmax_bytes": 9000}, "ports[0].ecn_kmin_bytes / ports[0].ecn_kmax_bytes"),
        ({"port": "B->D", "ecn_kmin_bytes": 9, "ecn_kmax_bytes": 5}, "ecn_kmin_bytes <= ecn_kmax_bytes"),
        ({"port": "B->D", "ecn_kmin_bytes": 1, "ecn_kmax_bytes": 5, "ecn_pmax": 0}, "ports[0].ecn_pmax"),
    ],
)
def test_bad_port_schedulers_exit_2_naming_the_entry(tmp_path, entry, named, refused):
    import tomli_w

    doc = _two_classes()
    doc["ports"] = [entry]
    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(doc))
    lines = refused(tmp_path, f)
    assert len(lines) == 1 and named in lines[0], lines


def test_a_port_headroom_overrides_its_bridges():
    """`[[ports]]` headroom_bytes: the port towards the lossless sender S
    with 90% of auto loses frames though the bridge's is auto; auto on that
    port alone keeps it lossless under a bridge-wide 90%."""
    import cnsim._core as _core
    from cnsim.classes_cases import headroom_case

    doc = headroom_case(100, 100.0, 1500)
    auto = _core.pause_headroom_bytes(100, 0.5, doc["bridge"]["latency_us"], 1500, 64, 1)
    doc["ports"] = [{"port": "B->S", "headroom_bytes": auto * 9 // 10}]
    assert cnsim.run(cnsim.Scenario(doc)).metric("headroom_drops_priority_3")[0] > 0
    doc = headroom_case(100, 100.0, 1500, headroom=auto * 9 // 10)
    doc["ports"] = [{"port": "B->S", "headroom_bytes": "auto"}]
    assert cnsim.run(cnsim.Scenario(doc)).metric("headroom_drops_priority_3")[0] == 0


def test_a_port_headroom_without_an_mmu_warns():
    doc = _two_classes()
    doc["ports"] = [{"port": "B->D", "headroom_bytes": 10_000}]
    with pytest.warns(
        cnsim.ScenarioWarning, match=r"ports\[0\].headroom_bytes: bridge B's buffer_mode is not \"mmu\""
    ):
        cnsim.run(cnsim.Scenario(doc))


def test_pause_rows_follow_each_priority_of_a_multi_class_port():
    """Two lossless priorities (3 and 4) meet at B1 and are paused by B2,
    whose port to D runs at 4 Gbit/s: B1's port to B2 (eight class
    queues) is paused at both, each on its own. The trace's pause_on /
    pause_off rows follow each (port, priority): they alternate, and over
    every port their spans add up to the run's paused time per priority."""
    doc = {
        "name": "two_lossless",
        "duration_ms": 4.0,
        "bridge": {"buffer_mode": "per_input"},
        "pause": {
            "enabled": True,
            "mode": "pfc",
            "lossless": [3, 4],
            "xoff_bytes": 30_000,
            "xon_bytes": 20_000,
        },
        "trace": {"events": ["pause_on", "pause_off"]},
        "nodes": [
            {"name": "S1", "kind": "station", "load": 0.6, "dest": "D", "priority": 3, "stop_ms": 3.0},
            {"name": "S2", "kind": "station", "load": 0.6, "dest": "D", "priority": 4, "stop_ms": 3.0},
            {"name": "D", "kind": "station"},
            {"name": "B1", "kind": "bridge"},
            {"name": "B2", "kind": "bridge"},
        ],
        "links": [
            {"a": "S1", "b": "B1"},
            {"a": "S2", "b": "B1"},
            {"a": "B1", "b": "B2"},
            {"a": "B2", "b": "D", "rate_gbps": 4.0},
        ],
    }
    r = cnsim.run(cnsim.Scenario(doc))
    ev = r.events().sort("time_ps")
    spans: dict[int, int] = {}
    for (port, prio), g in ev.group_by(["port", "priority"]):
        kinds = g["kind"].to_list()
        assert kinds == ["pause_on", "pause_off"] * (len(kinds) // 2), (port, prio, kinds[:6])
        t = g["time_ps"].to_list()
        spans[prio] = spans.get(prio, 0) + sum(t[i + 1] - t[i] for i in range(0, len(t), 2))
    b1 = ev.filter(pl.col("port") == "B1->B2")
    assert set(b1["priority"].to_list()) == {3, 4}, "B1's port is paused at each priority"
    for p in (3, 4):
        assert spans[p] == r.runs[0].frames[f"paused_ps_priority_{p}"] > 0
    # No row names a priority that is not paused.
    assert set(ev["priority"].to_list()) == {3, 4}
