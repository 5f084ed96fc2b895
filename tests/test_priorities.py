"""Eight priorities (issue 40): a station's 802.1p priority, and how a
bridge port's transmission selection (strict priority, then ETS by weight)
shares the port among the classes; bad values refused naming the parameter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import cnsim
import pytest


def _two_classes(**bridge: Any) -> dict[str, Any]:
    """S1 (priority 0) and S2 (priority 3) at line rate into D through B: B's
    port to D is the bottleneck; its buffer is unbounded so that both classes
    stay backlogged and the scheduler alone decides the shares."""
    return {
        "name": "two_classes",
        "duration_ms": 5.0,
        "measure": {"start_ms": 1.0, "end_ms": 5.0},
        "bridge": {"buffer_mode": "infinite", **bridge},
        "nodes": [
            {"name": "S1", "kind": "station", "load": 1.0, "dest": "D", "priority": 0},
            {"name": "S2", "kind": "station", "load": 1.0, "dest": "D"},
            {"name": "D", "kind": "station"},
            {"name": "B", "kind": "bridge"},
        ],
        "links": [{"a": "S1", "b": "B"}, {"a": "S2", "b": "B"}, {"a": "B", "b": "D"}],
    }


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
def test_bad_priorities_and_weights_exit_2_naming_the_parameter(tmp_path, setting, named):
    f = tmp_path / "s.toml"
    import tomli_w

    f.write_text(tomli_w.dumps(_two_classes()))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "cnsim",
            "run",
            str(f),
            *f"--set {setting}".split(),
            "--no-report",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error")]
    assert len(lines) == 1 and named in lines[0], p.stderr
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
