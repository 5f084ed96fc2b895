"""Scenario files: validation with one-line errors naming the parameter,
--set overrides, and resolution into engine units."""

import json

import cnsim
import pytest
from cnsim.scenario import apply_sets, load


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
        (["pause.xon_bytes=150000"], "pause.xon_bytes: 150000 is above pause.xoff_bytes"),
        (["duration_ms=0"], "duration_ms: 0 is not allowed"),
        (["pause.trigger='sometimes'"], "pause.trigger: 'sometimes' is not allowed"),
        (["bcn.gi=abc"], "bcn.gi: 'abc' is not allowed"),
    ],
)
def test_bad_values_name_the_parameter(sets, needle):
    with pytest.raises(cnsim.ScenarioError) as e:
        apply_sets(load("baseline"), sets)
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
    with pytest.raises(cnsim.ScenarioError, match="unknown scenario 'nosuch'; built-in scenarios: baseline"):
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
