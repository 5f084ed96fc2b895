"""The user docs stay in step with the code: docs/scenario-format.md names
every parameter and its example is a valid scenario; docs/results.md names
every metric a run produces."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import cnsim
import pytest
from cnsim import scenario as S
from cnsim import schemes

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _keys(cls) -> list[str]:
    return [f.alias or n for n, f in cls.model_fields.items()]


def test_scenario_format_names_every_parameter():
    text = (DOCS / "scenario-format.md").read_text()
    models = [
        S.ScenarioModel,
        S.Measure,
        S.Window,
        S.Fairness,
        S.Utilization,
        S.Defaults,
        S.BridgeDefaults,
        S.StationDefaults,
        S.Pause,
        S.Hotspot,
        S.Node,
        S.Link,
        S.Event,
        S.Trace,
        *schemes.TABLES.values(),
    ]
    tables = {k for k, f in S.ScenarioModel.model_fields.items() if S._is_model(S._unwrap(f.annotation)[0])}
    missing = [
        f"{m.__name__}.{k}"
        for m in models
        for k in _keys(m)
        if f"| `{k}` |" not in text and not (m is S.ScenarioModel and k in tables and f"[{k}" in text)
    ]
    assert not missing, f"undocumented in docs/scenario-format.md: {missing}"
    for name in schemes.TABLES:
        assert f"[{name}]" in text


def test_scenario_format_example_is_valid():
    text = (DOCS / "scenario-format.md").read_text()
    block = re.search(r"## An annotated example\n\n```toml\n(.*?)```", text, re.S)
    assert block is not None
    sc = cnsim.Scenario(tomllib.loads(block.group(1)))
    cfg = cnsim.resolve(sc)
    assert [e["action"] for e in cfg["events"]].count("link_rate") == 3


def test_results_doc_names_every_metric():
    pytest.importorskip("cnsim._core")
    text = (DOCS / "results.md").read_text()
    names: set[str] = set()
    for name, scheme in (("baseline", "bcn"), ("singlehop_hotspot", "qcn2pt")):
        sc = cnsim.load(name, scheme=scheme, pause=True, seeds=[0]).replace(duration_ms=20.0)
        if name == "singlehop_hotspot":
            sc = sc.replace(**{"hotspot.start_ms": 5.0, "hotspot.end_ms": 15.0})
        res = cnsim.run(sc, progress=False)
        names |= set(res.metrics)
        names |= set(res.timeseries()["series"].unique())
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert not missing, f"undocumented in docs/results.md: {missing}"
