"""The scenario format: every bad input is a one-line ScenarioError naming
the parameter (or node / link), its bad value and what is allowed; resolve()
produces the engine config of docs/engine-interface.md in engine units;
--set, replace() and the resolved TOML behave as documented in
docs/scenario-format.md; the engine accepts every resolved built-in
scenario and a few run."""

from __future__ import annotations

import copy
import json
import tomllib
from typing import Any

import cnsim
import pytest
from cnsim.scenario import apply_sets, builtin_names, load, parse_value, resolve

#: A bridge's mmu settings in the engine config, every one at its default.
MMU_DEFAULTS = {
    "reserve_bytes": 4096,
    "ingress_alpha": 0.125,
    "egress_alpha": 1.0,
    "headroom": "auto",
    "xon_offset_bytes": 3072,
}


def tiny(**top: Any) -> dict[str, Any]:
    """A valid two-station scenario: S -> B -> D."""
    raw: dict[str, Any] = {
        "name": "tiny",
        "duration_ms": 10.0,
        "nodes": [
            {"name": "S", "kind": "station", "load": 0.5, "dest": "D"},
            {"name": "D", "kind": "station"},
            {"name": "B", "kind": "bridge", "cp": True},
        ],
        "links": [{"a": "S", "b": "B"}, {"a": "B", "b": "D"}],
    }
    raw.update(top)
    return raw


def error_of(raw: dict[str, Any]) -> str:
    with pytest.raises(cnsim.ScenarioError) as e:
        cnsim.Scenario(raw)
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


def node(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in raw["nodes"] if n["name"] == name)


def test_tiny_is_valid():
    sc = cnsim.Scenario(tiny())
    assert sc.scheme == "nocm" and sc.pause is False and sc.seeds == [0]


# ---------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("pause", "xoff_bytes"), -5, "pause.xoff_bytes: -5 is not allowed; expected an integer >= 0"),
        (("pause", "xon_bytes"), 1.5, "pause.xon_bytes: 1.5 is not allowed; expected an integer"),
        (
            ("pause", "quanta"),
            70000,
            "pause.quanta: 70000 is not allowed; expected an integer >= 1 and <= 65535",
        ),
        (
            ("station", "nic_buffer_bytes"),
            -1,
            "station.nic_buffer_bytes: -1 is not allowed; expected an integer >= 1",
        ),
        (
            ("defaults", "link_rate_gbps"),
            -10,
            "defaults.link_rate_gbps: -10 is not allowed; expected a number >= 1e-09",
        ),
        (
            ("defaults", "link_delay_us"),
            -0.5,
            "defaults.link_delay_us: -0.5 is not allowed; expected a number >= 0",
        ),
        (("bridge", "latency_us"), -1, "bridge.latency_us: -1 is not allowed; expected a number >= 0"),
        (
            ("bridge", "buffer_mode"),
            "huge",
            "bridge.buffer_mode: 'huge' is not allowed; expected one of 'per_output', 'per_input', 'shared', 'dynamic', 'mmu' or 'infinite'",
        ),
        (("pause", "enabled"), "maybe", "pause.enabled: 'maybe' is not allowed; expected true or false"),
        (("duration_ms",), 0, "duration_ms: 0 is not allowed; expected a number >= 1e-09"),
        (("bin_us",), "fast", "bin_us: 'fast' is not allowed; expected a number, not a string"),
    ],
)
def test_bad_value_names_parameter_value_and_what_is_allowed(path, value, expected):
    raw = tiny()
    cur = raw
    for p in path[:-1]:
        cur = cur.setdefault(p, {})
    cur[path[-1]] = value
    assert error_of(raw) == expected


@pytest.mark.parametrize(
    ("name", "key", "value", "expected"),
    [
        ("S", "load", 1.5, "nodes.S.load: 1.5 is not allowed; expected a number >= 0 and <= 1"),
        ("S", "load", -0.1, "nodes.S.load: -0.1 is not allowed; expected a number >= 0 and <= 1"),
        ("S", "start_ms", -1, "nodes.S.start_ms: -1 is not allowed; expected a number >= 0"),
        ("S", "dest", 5, "nodes.S.dest: 5 is not allowed; expected a station name, 'uniform'"),
        ("S", "cp", True, "nodes.S.cp: not a parameter of a station"),
        ("B", "load", 0.5, "nodes.B.load: not a parameter of a bridge"),
        ("B", "buffer_bytes", -1, "nodes.B.buffer_bytes: -1 is not allowed; expected an integer >= 0"),
        ("B", "colour", "red", "nodes.B.colour: unknown parameter; known: name, kind, load"),
        (
            "S",
            "kind",
            "router",
            "nodes.S.kind: 'router' is not allowed; expected one of 'station' or 'bridge'",
        ),
    ],
)
def test_bad_node_parameter_names_the_node(name, key, value, expected):
    raw = tiny()
    node(raw, name)[key] = value
    assert error_of(raw).startswith(expected)


@pytest.mark.parametrize(("start", "stop"), [(0.0, 0.0), (5.0, 2.0)])
def test_a_source_stops_after_it_starts_by_the_engines_rule(start, stop):
    # start_ms < stop_ms: a node's declared rule (sections::node), the engine's.
    raw = tiny()
    node(raw, "S").update(start_ms=start, stop_ms=stop)
    with pytest.raises(cnsim.ScenarioError) as e:
        cnsim.Scenario(raw).engine_config_checked()
    assert str(e.value) == (
        f"nodes.S.start_ms / nodes.S.stop_ms: {start:g} / {stop:g} not allowed; expected start_ms < stop_ms"
    )
    node(raw, "S")["stop_ms"] = start + 1.0
    cnsim.Scenario(raw).engine_config_checked()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"a": "S", "b": "B", "rate_gbps": -1},
            "links.S-B.rate_gbps: -1 is not allowed; expected a number >= 1e-09",
        ),
        (
            {"a": "S", "b": "B", "delay_us": -2},
            "links.S-B.delay_us: -2 is not allowed; expected a number >= 0",
        ),
        ({"a": "S", "b": "X"}, "links.S-X: unknown node 'X'; nodes: S, D, B"),
        ({"a": "S", "b": "S"}, "links.S-S: a link needs two different nodes"),
    ],
)
def test_bad_link_names_the_link(change, expected):
    raw = tiny()
    raw["links"][0] = change
    assert error_of(raw).startswith(expected)


def test_unknown_keys_are_rejected_and_the_known_ones_listed():
    assert error_of(tiny(colour="red")).startswith("colour: unknown parameter; known: name, description")
    raw = tiny(pause={"xof_bytes": 1})
    assert (
        error_of(raw)
        == "pause.xof_bytes: unknown parameter; known: enabled, xoff_bytes, xon_bytes, trigger, quanta, mode, "
        "lossless, watchdog, watchdog_detection_ms, watchdog_restoration_ms, watchdog_poll_ms, deadlock_detector, "
        "deadlock_poll_ms, watchdog_action"
    )
    assert error_of(tiny(nocm={"x": 1})) == "nocm.x: unknown parameter; this table takes no parameters"
    assert error_of(tiny(bcn={"qeq": 1})).startswith("bcn.qeq: unknown parameter; known: qeq_pages, w, gi")


def test_missing_required_parameters():
    raw = tiny()
    del raw["duration_ms"]
    assert error_of(raw) == "duration_ms: required parameter is missing (run length (at least 1 ps))"
    raw = tiny()
    del raw["nodes"][0]["kind"]
    assert error_of(raw).startswith("nodes.S.kind: required parameter is missing")


# ---------------------------------------------------------------- topology


def test_duplicate_node_names():
    raw = tiny()
    raw["nodes"].append({"name": "B", "kind": "bridge"})
    assert error_of(raw) == "nodes.B: duplicate node name"


def test_station_without_a_link_and_with_two_links():
    raw = tiny()
    raw["nodes"].append({"name": "E", "kind": "station"})
    assert error_of(raw) == "nodes.E: a station needs exactly one link, it has 0"
    raw["links"].append({"a": "E", "b": "B"})
    raw["nodes"].append({"name": "B2", "kind": "bridge"})
    raw["links"].append({"a": "E", "b": "B2"})
    assert error_of(raw) == "nodes.E: a station needs exactly one link, it has 2"


def test_fixed_destination_unknown_self_or_a_bridge():
    raw = tiny()
    node(raw, "S")["dest"] = "Q"
    assert error_of(raw).startswith("nodes.S.dest: unknown node 'Q'")
    node(raw, "S")["dest"] = "S"
    assert error_of(raw).startswith("nodes.S.dest: 'S' is not another station")
    node(raw, "S")["dest"] = "B"
    assert error_of(raw).startswith("nodes.S.dest: 'B' is not another station")


def test_weighted_destinations():
    raw = tiny()
    node(raw, "S")["dest"] = {"D": 1.0, "Z": 2.0}
    assert error_of(raw) == "nodes.S.dest.Z: not another station of the scenario"
    node(raw, "S")["dest"] = {"D": -1.0}
    assert error_of(raw) == "nodes.S.dest: expected at least one positive weight"


def test_disconnected_topology():
    raw = tiny()
    raw["nodes"].append({"name": "B2", "kind": "bridge"})
    raw["links"][1] = {"a": "B2", "b": "D"}
    assert error_of(raw) == "nodes.S.dest: D is not reachable from S (disconnected topology)"
    # Stations do not forward: a path through a station does not count.
    raw = tiny()
    raw["nodes"] += [{"name": "E", "kind": "station", "load": 0.1, "dest": "S"}]
    raw["links"] += [{"a": "E", "b": "D"}]
    raw["links"][1] = {"a": "B", "b": "D"}
    assert "nodes.D: a station needs exactly one link, it has 2" == error_of(raw)


def test_uniform_needs_another_station():
    raw = tiny()
    raw["nodes"] = [n for n in raw["nodes"] if n["name"] != "D"]
    raw["links"] = raw["links"][:1]
    node(raw, "S")["dest"] = "uniform"
    assert error_of(raw) == "nodes.S.dest: 'uniform' needs at least one other station"


# ---------------------------------------------------------------- windows, PAUSE, events


@pytest.mark.parametrize("enabled", [True, False])
def test_xon_above_xoff(enabled: bool):
    # One validator: the [pause] rule is the engine's (declared in
    # crates/cnsim-core/src/sections.rs), with PAUSE on or off alike.
    sc = cnsim.Scenario(tiny(pause={"enabled": enabled, "xoff_bytes": 100, "xon_bytes": 200}))
    with pytest.raises(cnsim.ScenarioError) as e:
        sc.engine_config_checked()
    assert (
        str(e.value)
        == "pause.xon_bytes / pause.xoff_bytes: 200 / 100 not allowed; expected xon_bytes <= xoff_bytes"
    )


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        ({"windows": {"w": {"start_ms": 5.0}}}, "windows.w.end_ms: required parameter is missing"),
        ({"windows": {"measure": {"start_ms": 1.0, "end_ms": 2.0}}}, "windows.measure: reserved name"),
        ({"fairness": {"target_gbps": 2.5}}, "fairness.window: no window named 'fairness'; windows: none"),
        (
            {
                "windows": {"u": {"start_ms": 1.0, "end_ms": 2.0}},
                "utilization": {"link": "D->S", "window": "u"},
            },
            "utilization.link: 'D->S' is not a link direction FROM->TO",
        ),
        (
            {"hotspot": {"node": "B", "rate_gbps": 1, "start_ms": 1, "end_ms": 2}},
            "hotspot.node: 'B' is not allowed",
        ),
        (
            {"hotspot": {"node": "D", "rate_gbps": -1, "start_ms": 1, "end_ms": 2}},
            "hotspot.rate_gbps: -1 is not allowed",
        ),
        ({"events": [{"at_ms": 1.0, "action": "stop", "node": "B"}]}, "events[0].node: 'B' is not allowed"),
        (
            {"events": [{"at_ms": 1.0, "action": "link_rate", "from": "S", "to": "D", "rate_gbps": 1}]},
            "events[0]: 'S->D' is not a link direction",
        ),
        (
            {"events": [{"at_ms": -1.0, "action": "stop", "node": "S"}]},
            "events[0].at_ms: -1.0 is not allowed",
        ),
        ({"trace": {"ports": ["B->S", "S->D"]}}, "trace.ports: 'S->D' is not a link direction"),
        ({"cp_ports": ["S->B"]}, "cp_ports: 'S->B' is not allowed; expected a bridge port"),
        ({"seeds": 0}, "seeds: 0 is not allowed"),
        ({"seeds": [1, 1]}, "seeds: [1, 1] is not allowed"),
        ({"scheme": "bcm"}, "scheme: 'bcm' is not a known scheme; known: nocm, pause, bcn"),
    ],
)
def test_windows_pause_hotspot_events_seeds(top, expected):
    assert error_of(tiny(**top)).startswith(expected)


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        (
            {"measure": {"end_ms": 20.0}},
            "measure.end_ms / duration_ms: 20 / 10 not allowed; expected a window inside the run "
            "(end_ms <= duration_ms)",
        ),
        (
            {"measure": {"start_ms": 5.0, "end_ms": 5.0}},
            "measure.start_ms / measure.end_ms: 5 / 5 not allowed; expected start_ms < end_ms",
        ),
        # end_ms unset: the run end
        ({"measure": {"start_ms": 12.0}}, "measure.start_ms / measure.end_ms: 12 / 10 not allowed"),
        (
            {"windows": {"w": {"start_ms": 1.0, "end_ms": 11.0}}},
            "windows.w.end_ms / duration_ms: 11 / 10 not allowed",
        ),
        (
            {"windows": {"w": {"start_ms": 3.0, "end_ms": 2.0}}},
            "windows.w.start_ms / windows.w.end_ms: 3 / 2 not allowed; expected start_ms < end_ms",
        ),
        (
            {"hotspot": {"node": "D", "rate_gbps": 1, "start_ms": 3, "end_ms": 2}},
            "hotspot.start_ms / hotspot.end_ms: 3 / 2 not allowed; expected start_ms < end_ms",
        ),
        (
            {"hotspot": {"node": "D", "rate_gbps": 1e-10, "start_ms": 1, "end_ms": 2}},
            "hotspot.rate_gbps: 1e-10 not allowed; expected rate_gbps = 0 (stopped) or >= 1e-09 (1 bit/s)",
        ),
        (
            {"events": [{"at_ms": 1.0, "action": "start"}]},
            'events[0].action / events[0].node: "start" / null not allowed; '
            "expected a start or stop event names its node",
        ),
        (
            {"events": [{"at_ms": 1.0, "action": "link_rate", "from": "B", "to": "D"}]},
            'events[0].action / events[0].from / events[0].to / events[0].rate_gbps: "link_rate" / "B" / "D" / '
            "null not allowed; expected a link_rate event names from, to and rate_gbps",
        ),
        (
            # Rounded to 0 bit/s in the engine config: only the event as written shows it.
            {"events": [{"at_ms": 1.0, "action": "link_rate", "from": "B", "to": "D", "rate_gbps": 1e-10}]},
            "events[0].rate_gbps: 1e-10 not allowed; expected rate_gbps = 0 (stopped) or >= 1e-09 (1 bit/s)",
        ),
    ],
)
def test_section_rules_are_the_engines(top, expected):
    # One validator: a window's, the hotspot's and an event's rules are declared in the
    # engine (crates/cnsim-core/src/sections.rs) and checked there.
    sc = cnsim.Scenario(tiny(**top))
    with pytest.raises(cnsim.ScenarioError) as e:
        sc.engine_config_checked()
    assert str(e.value).startswith(expected), str(e.value)


# ---------------------------------------------------------------- resolve


def test_resolve_shape_and_units():
    raw = tiny(
        duration_ms=12.5,
        bin_us=250.0,
        measure={"start_ms": 0.25},
        windows={"late": {"start_ms": 1.0 / 3.0, "end_ms": 12.0}},
        defaults={"link_rate_gbps": 2.5, "link_delay_us": 0.1234567},
        station={"processing_us": 1.5},
        bridge={"latency_us": 0.75, "buffer_bytes": 99_000},
        pause={"enabled": True, "xoff_bytes": 50_000, "xon_bytes": 40_000, "trigger": "ingress"},
        events=[{"at_ms": 7.0, "action": "link_rate", "from": "B", "to": "D", "rate_gbps": 0.3333}],
    )
    node(raw, "S").update(start_ms=2.0, stop_ms=9.0000004, rlq_bytes=1234)
    node(raw, "B").update(buffer_mode="infinite")
    raw["links"][1]["rate_gbps"] = 40.0
    cfg = resolve(cnsim.Scenario(raw))
    assert set(cfg) == {
        "duration_ps",
        "bin_ps",
        "windows",
        "frame_bytes",
        "control_frame_bytes",
        "max_traced_flows",
        "stations",
        "bridges",
        "links",
        "events",
        "pause",
        "trace_ports",
        "cp_ports",
        "routing",
        "routes",
        "port_overrides",
        "per_flow",
        "max_series_keys",
        "trace_rls",
        "trace",
        "transport",
        "scheme",
        "fidelity",
        "flow",
    }  # every field of the engine's config, its defaults explicit (compile.rs)
    assert cfg["fidelity"] == "packet"
    assert cfg["duration_ps"] == 12_500_000_000 and cfg["bin_ps"] == 250_000_000
    assert cfg["windows"] == [
        {"name": "measure", "start_ps": 250_000_000, "end_ps": 12_500_000_000},
        {"name": "late", "start_ps": 333_333_333, "end_ps": 12_000_000_000},
    ]
    assert cfg["frame_bytes"] == 1500 and cfg["control_frame_bytes"] == 64
    assert cfg["stations"][0] == {
        "name": "S",
        "load": 0.5,
        "dest": {"kind": "fixed", "node": "D"},
        "nic_buffer_bytes": 150_000,
        "rlq_bytes": 1234,
        "processing_ps": 1_500_000,
        "rl_scope": "flow",
        "nic_full": "defer",
        "rl_order": "round_robin",
        "priority": 3,
    }
    assert cfg["stations"][1]["dest"] == {"kind": "uniform"}
    assert cfg["bridges"] == [
        {
            "name": "B",
            "buffer_mode": "infinite",
            "buffer_bytes": 99_000,
            "latency_ps": 750_000,
            "cp": True,
            "ports": None,
            "dt_alpha": 1.0,
            "scheduler": {"strict": [], "ets_weights": (1,) * 8},
            "mmu": MMU_DEFAULTS,
            "red": None,
        }
    ]
    assert cfg["links"] == [
        {"a": "S", "b": "B", "rate_bps": 2_500_000_000, "delay_ps": 123_457},
        {"a": "B", "b": "D", "rate_bps": 40_000_000_000, "delay_ps": 123_457},
    ]
    # A source with load starts (default 0 ms -> here 2 ms) and stops; D (load 0) has no events.
    assert cfg["events"] == [
        {"at_ps": 2_000_000_000, "action": "start", "node": "S"},
        {"at_ps": 9_000_000_400, "action": "stop", "node": "S"},
        {"at_ps": 7_000_000_000, "action": "link_rate", "from": "B", "to": "D", "rate_bps": 333_300_000},
    ]
    assert cfg["pause"] == {
        "enabled": True,
        "trigger": "ingress",
        "xoff_bytes": 50_000,
        "xon_bytes": 40_000,
        "quanta": 65535,
        "mode": "pause",
        "lossless": [3, 4],
        "watchdog": False,
        "watchdog_detection_ms": 200.0,
        "watchdog_restoration_ms": 200.0,
        "watchdog_poll_ms": 20.0,
        "watchdog_action": "drop",
        "deadlock_detector": True,
        "deadlock_poll_ms": 1.0,
    }
    assert cfg["trace_ports"] == ["B->S", "B->D"]  # default: every port of a cp bridge
    assert cfg["scheme"] == {"name": "nocm"}
    ints = [cfg["duration_ps"], cfg["bin_ps"]] + [e["at_ps"] for e in cfg["events"]]
    ints += [lk["rate_bps"] for lk in cfg["links"]] + [lk["delay_ps"] for lk in cfg["links"]]
    assert all(type(x) is int for x in ints)
    json.dumps(cfg)  # JSON-serialisable as is


def test_resolve_weighted_dest_and_hotspot_restores_the_configured_rate():
    raw = tiny(hotspot={"node": "D", "rate_gbps": 0.5, "start_ms": 2.0, "end_ms": 4.0})
    raw["nodes"].append({"name": "E", "kind": "station"})
    raw["links"].append({"a": "E", "b": "B"})
    raw["links"][1]["rate_gbps"] = 25.0
    node(raw, "S")["dest"] = {"D": 1.0, "E": 3.0}
    cfg = resolve(cnsim.Scenario(raw))
    assert cfg["stations"][0]["dest"] == {"kind": "weighted", "weights": [["D", 1.0], ["E", 3.0]]} or cfg[
        "stations"
    ][0]["dest"] == {"kind": "weighted", "weights": [("D", 1.0), ("E", 3.0)]}
    rates = [e for e in cfg["events"] if e["action"] == "link_rate"]
    assert rates == [
        {"at_ps": 2_000_000_000, "action": "link_rate", "from": "B", "to": "D", "rate_bps": 500_000_000},
        {"at_ps": 4_000_000_000, "action": "link_rate", "from": "B", "to": "D", "rate_bps": 25_000_000_000},
    ]
    assert {"name": "hotspot", "start_ps": 2_000_000_000, "end_ps": 4_000_000_000} in cfg["windows"]


def test_resolve_with_scheme_and_pause_arguments():
    sc = cnsim.Scenario(tiny())
    assert resolve(sc, pause=True)["pause"]["enabled"] is True
    cfg = resolve(sc, scheme="pause")
    assert cfg["scheme"] == {"name": "nocm"} and cfg["pause"]["enabled"] is True
    assert resolve(sc, scheme="bcn")["scheme"]["name"] == "bcn"
    assert sc.scheme == "nocm" and not sc.pause  # resolve() does not change the scenario


# ---------------------------------------------------------------- --set, replace, seeds


def test_parse_value_reads_toml_literals():
    assert parse_value("120000") == 120000
    assert parse_value("0.5") == 0.5
    assert parse_value("true") is True
    assert parse_value('"qcn"') == "qcn"
    assert parse_value("qcn") == "qcn"  # a bare word is a string
    assert parse_value('["B5->D", "B1->B5"]') == ["B5->D", "B1->B5"]
    assert parse_value("{ D = 1.0, E = 3.0 }") == {"D": 1.0, "E": 3.0}


def test_set_by_dotted_name():
    sc = apply_sets(
        load("baseline"),
        [
            "pause.xoff_bytes=120000",
            "pause.xon_bytes=100000",
            "hotspot.rate_gbps=0.5",
            "hotspot.node=D",
            "hotspot.start_ms=20",
            "hotspot.end_ms=40",
            "links.B5-D.delay_us=2",
            "nodes.S2.dest=S1",
            "bcn.w=4",
        ],
    )
    m = sc.model
    assert (m.pause.xoff_bytes, m.pause.xon_bytes) == (120_000, 100_000)
    assert m.hotspot is not None and m.hotspot.rate_gbps == 0.5
    assert next(lk for lk in m.links if lk.b == "D").delay_us == 2
    assert next(n for n in m.nodes if n.name == "S2").dest == "S1"
    assert m.bcn.w == 4


def test_set_pause_enabled_scheme_and_seeds_through_set():
    sc = apply_sets(load("baseline"), ["pause.enabled=true", "scheme=nocm", "seeds=3"])
    assert sc.pause and sc.scheme == "nocm" and sc.seeds == [0, 1, 2]
    assert resolve(sc)["pause"]["enabled"] is True


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("nosuch.key=1", "--set nosuch.key: unknown parameter 'nosuch'; known top-level names: bcn, bin_us"),
        ("pause=1", "--set pause: 1 is not allowed; expected a table"),
        ("duration_ms.x=1", "--set duration_ms.x: 'duration_ms' is not a table"),
        ("nodes.Q.load=1", "--set nodes.Q.load: no node named 'Q'; nodes: S1, S2"),
        ("nodes.S1=1", "--set nodes.S1: expected nodes.NAME.PARAMETER or links.A-B.PARAMETER"),
        ("pause.xoff_bytes", "--set pause.xoff_bytes: expected KEY=VALUE"),
        (
            "station.nic_buffer_bytes=-1",
            "--set station.nic_buffer_bytes: -1 is not allowed; expected an integer >= 1",
        ),
        ("pause.xoff_bytes=-5", "--set pause.xoff_bytes: -5 is not allowed; expected an integer >= 0"),
        ("..=1", "--set ..: not a dotted parameter name"),
    ],
)
def test_bad_set_items(item, expected):
    with pytest.raises(cnsim.ScenarioError) as e:
        apply_sets(load("baseline"), [item])
    assert str(e.value).startswith(expected)
    assert "\n" not in str(e.value)


def test_replace_keeps_choices_and_is_a_copy():
    base = load("baseline")
    sc = base.replace(pause=True)
    assert sc.pause and not base.pause
    assert sc.replace(scheme="nocm").pause  # changing the scheme keeps PAUSE
    assert sc.replace(pause=False).pause is False
    p = base.replace(scheme="pause")
    assert p.scheme == "nocm" and p.pause
    assert base.replace(seeds=4).seeds == [0, 1, 2, 3]
    assert base.replace(seeds=range(2, 5)).seeds == [2, 3, 4]
    assert base.replace(seeds=[7]).seeds == [7]
    assert base.replace(**{"nodes.S1.load": 0.2}).model.nodes[0].load == 0.2
    assert base.model.nodes[0].load == 0.49


def test_replace_duration_clips_windows_and_keeps_later_events():
    with pytest.warns(cnsim.ScenarioWarning, match="window fairness .20 ms, 80 ms. clipped to end at 50 ms"):
        sc = load("baseline").replace(duration_ms=50.0)
    assert sc.model.measure.end_ms == 50.0
    assert sc.model.windows["fairness"].end_ms == 50.0
    # S3 / S4 stop at 80 ms, after the shorter run's end: allowed, the engine never gets there.
    assert any(e["action"] == "stop" and e["node"] == "S3" for e in resolve(sc)["events"])


def test_a_shorter_run_warns_for_each_window_it_clips_or_drops(recwarn):
    # Baseline at 20 ms loses its fairness window: no jain, which once showed
    # only as a KeyError of res.metric("jain") later.
    with pytest.warns(cnsim.ScenarioWarning) as got:
        sc = load("baseline").replace(duration_ms=20.0)
    (w,) = got
    msg = str(w.message)
    assert msg.startswith("duration_ms = 20 ms: measure [0 ms, 100 ms] clipped to end at 20 ms")
    assert (
        "window fairness starts at 20 ms, after the run: dropped with [fairness] and its metrics (jain" in msg
    )
    assert "window utilization [10 ms, 80 ms] clipped to end at 20 ms" in msg
    assert sc.model.fairness is None and "fairness" not in sc.model.windows
    with pytest.warns(cnsim.ScenarioWarning, match="utilization starts at 10 ms.*link_utilization"):
        load("baseline", duration_ms=5.0)
    with pytest.warns(cnsim.ScenarioWarning, match="--set|duration_ms = 20 ms"):
        apply_sets(load("baseline"), ["duration_ms=20"])
    with pytest.warns(cnsim.ScenarioWarning, match="the hotspot starts at 100 ms, after the run"):
        load("singlehop_hotspot").replace(duration_ms=50.0)
    # Nothing clipped, nothing said.
    recwarn.clear()
    load("baseline").replace(duration_ms=100.0)
    load("baseline").replace(duration_ms=150.0)
    assert not [w for w in recwarn if issubclass(w.category, cnsim.ScenarioWarning)]


def test_the_cli_says_which_windows_a_shorter_run_lost(cli, tmp_path):
    r = cli("run", "baseline", "--duration", "20", "--seed", "0", "--out", str(tmp_path / "o"), "--json")
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("warning:")]
    assert len(lines) == 1 and "window fairness starts at 20 ms, after the run: dropped" in lines[0]
    assert "jain" not in json.loads(r.stdout)["metrics"]


# ---------------------------------------------------------------- files


def test_malformed_toml_and_missing_files(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\nduration_ms = [\n")
    with pytest.raises(cnsim.ScenarioError, match=r"^.*bad\.toml: malformed TOML: "):
        load(bad)
    with pytest.raises(cnsim.ScenarioError, match="does not exist"):
        load(tmp_path / "none.toml")
    with pytest.raises(
        cnsim.ScenarioError,
        match=r"^unknown scenario 'xyz'; built-in scenarios: allreduce_ring, alltoall_fattree, baseline",
    ):
        load("xyz")


def test_shown_toml_has_units_reads_back_and_reruns_identically():
    for name in [
        n for n in builtin_names() if n not in ("flows_pods", "hpcc_fattree")
    ]:  # flow level: test_fidelity.py
        for scheme, pause in (("nocm", True), ("bcn", False)):
            sc = load(name, scheme=scheme, pause=pause, seeds=[3, 5])
            text = sc.to_toml()
            parsed = tomllib.loads(text)
            assert parsed["scheme"] == scheme and parsed["pause"]["enabled"] is pause
            assert parsed["seeds"] == [3, 5]
            again = cnsim.Scenario(parsed)
            assert resolve(again) == resolve(sc)
            assert again.seeds == [3, 5]
    lines = load("baseline").to_toml().splitlines()
    xoff = next(line for line in lines if line.startswith("xoff_bytes"))
    assert "# XOFF threshold (bytes)" in xoff
    assert any(line.startswith("link_delay_us") and "(us)" in line for line in lines)


def test_baseline_is_scenarios_md_section_1():
    sc = load("baseline", scheme="nocm")
    m = sc.model
    cfg = resolve(sc)
    assert (m.duration_ms, sc.seeds, m.bin_us) == (100.0, list(range(25)), 100.0)
    stations = {s["name"]: s for s in cfg["stations"]}
    assert set(stations) == {"S1", "S2", "S3", "S4", "D"}
    for i in range(1, 5):
        s = stations[f"S{i}"]
        assert s["load"] == 0.49 and s["dest"] == {"kind": "fixed", "node": "D"}
        assert s["processing_ps"] == 2_000_000 and s["rlq_bytes"] == 150_000
    pairs = {frozenset((lk["a"], lk["b"])) for lk in cfg["links"]}
    expect = {frozenset((f"S{i}", f"B{i}")) for i in range(1, 5)}
    expect |= {frozenset((f"B{i}", "B5")) for i in range(1, 5)} | {frozenset(("B5", "D"))}
    assert pairs == expect
    assert all(lk["rate_bps"] == 10**10 and lk["delay_ps"] == 500_000 for lk in cfg["links"])
    bridges = {b["name"]: b for b in cfg["bridges"]}
    assert {n for n, b in bridges.items() if b["cp"]} == {"B5"}
    assert all(b["buffer_mode"] == "per_output" and b["buffer_bytes"] == 150_000 for b in bridges.values())
    assert all(b["latency_ps"] == 1_000_000 for b in bridges.values())
    # The loop S1 -> B1 -> B5 (CP) and the notification back to S1: 4 link
    # traversals, 4 bridge latencies (B1, B5, B5 for the CNM, B1) and the
    # station's processing = the stated 8 us.
    loop_ps = 4 * 500_000 + 4 * 1_000_000 + stations["S1"]["processing_ps"]
    assert loop_ps == 8_000_000
    ev = sorted((e["at_ps"], e["action"], e["node"]) for e in cfg["events"])
    assert ev == [(5 * 10**9, "start", f"S{i}") for i in range(1, 5)] + [
        (80 * 10**9, "stop", "S3"),
        (80 * 10**9, "stop", "S4"),
    ]
    windows = {w["name"]: (w["start_ps"], w["end_ps"]) for w in cfg["windows"]}
    assert windows["measure"] == (0, 100 * 10**9)
    assert windows["fairness"] == (20 * 10**9, 80 * 10**9)
    assert windows["utilization"] == (10 * 10**9, 80 * 10**9)
    assert m.fairness is not None and m.fairness.target_gbps == 2.5
    assert cfg["pause"]["xoff_bytes"] == 140_000 and cfg["pause"]["xon_bytes"] == 130_000
    assert cfg["trace_ports"] == ["B5->D"]


def test_scenario_dict_is_not_modified():
    raw = tiny()
    before = copy.deepcopy(raw)
    cnsim.Scenario(raw, scheme="pause", seeds=3).replace(**{"pause.xoff_bytes": 10, "pause.xon_bytes": 5})
    assert raw == before


def test_engine_accepts_every_resolved_builtin_scenario():
    import cnsim._core as core
    from cnsim.schemes import SCHEMES

    for name in [
        n for n in builtin_names() if n not in ("flows_pods", "hpcc_fattree")
    ]:  # flow level: test_fidelity.py
        for scheme in SCHEMES:
            sc = load(name, scheme=scheme)
            if name == "rdma_tcp" and scheme not in ("nocm", "pause", "dcqcn", "hpcc", "timely", "dctcp"):
                # DCTCP's workload beside a scheme no pair is built for.
                with pytest.raises(cnsim.ScenarioError, match="workloads.scheme: dctcp beside .* not a pair"):
                    sc.engine_json()
                continue
            sim = core.Simulation(sc.engine_json(), 0)
            assert sim.duration_ps == resolve(sc)["duration_ps"] and sim.now_ps == 0


# ------------------------------------------- built-in scenarios, --set and engine units


def test_baseline_resolves_to_engine_units():
    sc = load("baseline", scheme="nocm")
    cfg = sc.engine_config()
    assert cfg["duration_ps"] == 100 * 10**9
    assert cfg["bin_ps"] == 100 * 10**6
    names = [w["name"] for w in cfg["windows"]]
    assert names[0] == "measure" and "fairness" in names and "utilization" in names
    s1 = next(s for s in cfg["stations"] if s["name"] == "S1")
    assert s1["load"] == 0.49 and s1["dest"] == {"kind": "fixed", "node": "D"}
    assert s1["processing_ps"] == 2_000_000 and s1["rlq_bytes"] == 150_000
    b5 = next(b for b in cfg["bridges"] if b["name"] == "B5")
    assert b5 == {
        "name": "B5",
        "buffer_mode": "per_output",
        "buffer_bytes": 150_000,
        "latency_ps": 1_000_000,
        "cp": True,
        "ports": None,
        "dt_alpha": 1.0,
        "scheduler": {"strict": [], "ets_weights": (1,) * 8},
        "mmu": MMU_DEFAULTS,
        "red": None,
    }
    assert all(link["rate_bps"] == 10**10 and link["delay_ps"] == 500_000 for link in cfg["links"])
    starts = sorted(e["node"] for e in cfg["events"] if e["action"] == "start")
    stops = sorted((e["node"], e["at_ps"]) for e in cfg["events"] if e["action"] == "stop")
    assert starts == ["S1", "S2", "S3", "S4"]
    assert stops == [("S3", 80 * 10**9), ("S4", 80 * 10**9)]
    assert cfg["scheme"] == {"name": "nocm"}
    assert cfg["pause"]["enabled"] is False


def test_scheme_tables_map_to_engine_parameters():
    sc = load("baseline", scheme="bcn00")
    s = sc.engine_config()["scheme"]
    assert s["name"] == "bcn" and s["bcn00"] is True and s["bcn_max"] is False
    assert s["qeq_pages"] == 375 and s["gi"] == 0.53 and s["ru_mbps"] == 1 and s["tmax_us"] == 100
    ecm = load("baseline", scheme="ecm").engine_config()["scheme"]
    assert (
        ecm["bcn_max"]
        and ecm["oversampling"]
        and ecm["sample_bytes"] == 75_000
        and ecm["qmc_bytes"] == 1300 * 64
    )
    q2 = load("singlehop_hotspot", scheme="qcn2pt").engine_config()["scheme"]
    assert q2["name"] == "qcn" and q2["three_point"] is False and q2["sampling"] == "bytes"
    assert (
        q2["r_ai_mbps"] == 12 and q2["timer_ms"] == 0 and q2["hai"] is False and q2["qeq_bytes"] == 409 * 64
    )
    q3 = load("singlehop_hotspot", scheme="qcn3pt").engine_config()["scheme"]
    assert q3["three_point"] is True and q3["refp"] == 0.04
    qf = load("singlehop_hotspot", scheme="qcn").engine_config()["scheme"]
    assert qf["sampling"] == "table" and qf["timer_ms"] == 15 and qf["efr"] == "standard"
    # --scheme pause is nocm with PAUSE on
    p = load("baseline", scheme="pause")
    assert p.pause and p.engine_config()["scheme"] == {"name": "nocm"}


def test_hotspot_becomes_two_link_rate_events_and_a_window():
    sc = apply_sets(load("singlehop_hotspot"), ["hotspot.rate_gbps=0.5"])
    cfg = sc.engine_config()
    ev = [e for e in cfg["events"] if e["action"] == "link_rate"]
    assert ev == [
        {"at_ps": 100 * 10**9, "action": "link_rate", "from": "SW", "to": "H0", "rate_bps": 500_000_000},
        {"at_ps": 500 * 10**9, "action": "link_rate", "from": "SW", "to": "H0", "rate_bps": 10**10},
    ]
    assert {"name": "hotspot", "start_ps": 100 * 10**9, "end_ps": 500 * 10**9} in cfg["windows"]
    # Every output port of the bridge is a CP (docs/calibration.md, one reading for every scenario).
    assert cfg["cp_ports"] == [] and all(b["cp"] for b in cfg["bridges"])


def test_set_overrides_nested_values_and_nodes_by_name():
    sc = apply_sets(
        load("baseline"),
        ["pause.xoff_bytes=120000", "pause.xon_bytes=110000", "nodes.S1.load=0.3", "bcn.w=4"],
    )
    assert sc.model.pause.xoff_bytes == 120_000
    assert next(n for n in sc.model.nodes if n.name == "S1").load == 0.3
    assert sc.model.bcn.w == 4


@pytest.mark.parametrize(
    ("sets", "needle"),
    [
        (["nosuch.key=1"], "unknown parameter 'nosuch'"),
        (["bcn.gx=1"], "bcn.gx: unknown parameter"),
        (["station.nic_buffer_bytes=-1"], "station.nic_buffer_bytes: -1 is not allowed"),
        (["defaults.link_rate_gbps=-10"], "defaults.link_rate_gbps: -10 is not allowed"),
        (["nodes.S1.load=1.5"], "nodes.S1.load: 1.5 is not allowed"),
        (["nodes.S9.load=0.5"], "no node named 'S9'"),
        (["pause.xon_bytes=150000"], "pause.xon_bytes / pause.xoff_bytes: 150000 / 140000 not allowed"),
        (["duration_ms=0"], "duration_ms: 0 is not allowed"),
        (["pause.trigger='sometimes'"], "pause.trigger: 'sometimes' is not allowed"),
        (["bcn.gi=abc"], "bcn.gi: 'abc' is not allowed"),
    ],
)
def test_bad_values_name_the_parameter(sets, needle):
    with pytest.raises(cnsim.ScenarioError) as e:
        apply_sets(load("baseline"), sets).engine_config_checked()
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def _raw():
    return load("baseline").raw


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda r: r["links"].append({"a": "S1", "b": "B1"}), "links.S1-B1: duplicate link"),
        (lambda r: r["links"].append({"a": "S1", "b": "X"}), "unknown node 'X'"),
        (lambda r: r["nodes"].append({"name": "S1", "kind": "station"}), "nodes.S1: duplicate node name"),
        (lambda r: r["links"].pop(0), "nodes.S1: a station needs exactly one link"),
        (lambda r: r["nodes"][0].update(dest="Q"), "nodes.S1.dest: unknown node 'Q'"),
        (lambda r: r["nodes"][0].update(dest="S1"), "nodes.S1.dest: 'S1' is not another station"),
        (
            lambda r: (
                r["links"].__setitem__(8, {"a": "B5", "b": "B4"}) or r["links"].append({"a": "D", "b": "B4"})
            ),
            "duplicate link",
        ),
        (lambda r: r.update(trace={"ports": ["B5->S1"]}), "trace.ports: 'B5->S1' is not a link direction"),
        (lambda r: r["nodes"][0].update(colour="red"), "nodes.S1.colour: unknown parameter"),
    ],
)
def test_bad_topologies_name_the_node_or_link(mutate, needle):
    raw = _raw()
    mutate(raw)
    with pytest.raises(cnsim.ScenarioError) as e:
        cnsim.Scenario(raw)
    assert needle in str(e.value)


def test_disconnected_destination_is_rejected():
    raw = _raw()
    # Cut D off: link it to a new bridge that nothing else reaches.
    raw["links"] = [lk for lk in raw["links"] if lk["b"] != "D"]
    raw["nodes"].append({"name": "B6", "kind": "bridge"})
    raw["links"].append({"a": "B6", "b": "D"})
    with pytest.raises(cnsim.ScenarioError, match="not reachable"):
        cnsim.Scenario(raw)


def test_unknown_scheme_and_scenario():
    with pytest.raises(cnsim.ScenarioError, match="'nosuch' is not a known scheme; known: nocm"):
        load("baseline", scheme="nosuch")
    with pytest.raises(
        cnsim.ScenarioError,
        match="unknown scenario 'nosuch'; built-in scenarios: allreduce_ring, alltoall_fattree, baseline",
    ):
        load("nosuch")


def test_shorter_duration_clips_windows():
    sc = load("baseline").replace(duration_ms=15.0)
    assert "fairness" not in sc.model.windows and sc.model.fairness is None
    assert sc.model.windows["utilization"].end_ms == 15.0


def test_show_roundtrips(tmp_path):
    sc = load("baseline", scheme="ecm")
    path = tmp_path / "s.toml"
    path.write_text(sc.to_toml())
    again = load(path)
    assert again.scheme == "ecm"
    assert json.loads(again.engine_json()) == json.loads(sc.engine_json())


def test_entries_alike_but_for_their_names_are_each_checked():
    """Entries alike but for their identity keys are checked once and
    copied (a generated fabric's hosts); each one's name or ends are still
    checked, and a key that only a later entry adds is still refused."""
    raw = tiny()
    raw["nodes"].append({"name": "S2", "kind": "station"})
    raw["links"].append({"a": "S2", "b": "B"})
    sc = cnsim.Scenario(raw)
    s2 = next(n for n in sc.model.nodes if n.name == "S2")
    assert s2.kind == "station" and s2.load == 0.0 and s2.fields_set == {"name", "kind"}
    bad = tiny()
    bad["nodes"].append({"name": 7, "kind": "station"})
    with pytest.raises(cnsim.ScenarioError, match=r"nodes\.7\.name: 7 is not allowed; expected a string"):
        cnsim.Scenario(bad)
    extra = tiny()
    extra["nodes"].append({"name": "S2", "kind": "station", "a": "x"})
    with pytest.raises(cnsim.ScenarioError, match=r"nodes\.S2\.a: unknown parameter"):
        cnsim.Scenario(extra)
