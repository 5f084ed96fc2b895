"""The user docs stay in step with the code: docs/scenario-format.md names
every parameter and its example is a valid scenario; docs/results.md names
every metric a run produces."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import cnsim
import pytest
from cnsim import docs, schemes
from cnsim import scenario as S

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_parameter_tables_are_generated_from_the_declarations_and_current():
    # docs/scenario-format.md's tables come from the declarations; a
    # parameter added, renamed or re-defaulted without `python -m cnsim.docs`
    # fails here.
    text = (DOCS / "scenario-format.md").read_text()
    assert docs.render(text) == text, "docs/scenario-format.md is out of date: run `python -m cnsim.docs`"
    for name, table in schemes.TABLES.items():
        assert f"### `[{name}]`" in text
        for key, f in table.model_fields.items():
            assert f"| `{key}` | " in text and (f.description or "").replace("|", "\\|") in text


def test_a_changed_declaration_changes_the_generated_tables(monkeypatch):
    before = docs.parameter_tables()
    monkeypatch.setattr(S.model.Pause.model_fields["xoff_bytes"], "description", "a new meaning")
    after = docs.parameter_tables()
    assert (
        before != after
        and "| `xoff_bytes` | integer | bytes | `140000` |" in after
        and "| a new meaning |" in after
    )


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


def test_the_declarations_file_is_the_engines():
    # cnsim reads the schemes' declarations from a file (no engine for
    # --help, list, show); it must be what the engine declares now.
    import json

    from cnsim import _core
    from cnsim.declarations import PATH

    assert json.loads(PATH.read_text()) == json.loads(_core.scheme_declarations()), (
        "python/cnsim/declarations.json is out of date: run `python -m cnsim.docs`"
    )
