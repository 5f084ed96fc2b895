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

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_parameter_tables_are_generated_from_the_declarations_and_current():
    # docs/scenario-format.md's tables come from the declarations; a
    # parameter added, renamed or re-defaulted without `python -m cnsim.docs`
    # fails here.
    text = (DOCS / "scenario-format.md").read_text()
    assert docs.render(text) == text, "docs/scenario-format.md is out of date: run `python -m cnsim.docs`"
    for name, table in schemes.TABLES.items():
        assert f"### `[{name}]`" in text
        for key in table.names:
            assert f"| `{key}` | " in text and table._params[key]["help"].replace("|", "\\|") in text


def test_a_changed_declaration_changes_the_generated_tables(monkeypatch):
    before = docs.parameter_tables()
    monkeypatch.setitem(
        S.model.Pause._params, "xoff_bytes", {**S.model.Pause._params["xoff_bytes"], "help": "a new meaning"}
    )
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
    import cnsim._core  # noqa: F401  (a broken engine fails here, not skips)

    text = (DOCS / "results.md").read_text()
    names: set[str] = set()
    for name, scheme in (("baseline", "bcn"), ("singlehop_hotspot", "qcn2pt")):
        sc = cnsim.load(name, scheme=scheme, pause=True, seeds=[0]).replace(duration_ms=20.0)
        if name == "singlehop_hotspot":
            sc = sc.replace(**{"hotspot.start_ms": 5.0, "hotspot.end_ms": 15.0})
        res = cnsim.run(sc, progress=False)
        names |= set(res.stats)
        names |= set(res.timeseries()["series"].unique())
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert not missing, f"undocumented in docs/results.md: {missing}"


# ------------------------------------------------------- the docs' Python blocks

ROOT = DOCS.parent
#: A Python block that is not meant to run says so on the line above its fence:
#: `<!-- not run: REASON -->` (a listing of signatures, a SLURM cluster, ...).
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")


def python_blocks() -> list[tuple[str, int, str, str | None]]:
    """Every ```python block of README.md and docs/*.md: (file, line, code,
    why it is not run or None)."""
    out = []
    for path in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() == "```python":
                start = i
                j = i + 1
                while lines[j].strip() != "```":
                    j += 1
                above = NOT_RUN.search(lines[start - 1]) if start else None
                code = "\n".join(lines[start + 1 : j]) + "\n"
                out.append((path.name, start + 1, code, above.group(1) if above else None))
                i = j
            elif lines[i].lstrip().startswith("```python"):
                raise AssertionError(
                    f"{path.name}:{i + 1}: use a plain ```python fence (and a not-run comment)"
                )
            i += 1
    return out


def run_block(code: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Runs one block as a user would paste it, in a fresh namespace and an empty
    working directory (its results/ land there)."""
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "__docs__"}
    exec(compile(code, where, "exec"), ns)  # noqa: S102 - the project's own docs
    return ns


BLOCKS = python_blocks()


def test_the_docs_have_python_blocks_and_each_unrun_one_says_why():
    assert len(BLOCKS) >= 6
    run = [b for b in BLOCKS if b[3] is None]
    assert {b[0] for b in run} >= {"README.md", "results.md", "sweeps.md"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,line,code", [pytest.param(*b[:3], id=f"{b[0]}:{b[1]}") for b in BLOCKS if b[3] is None]
)
def test_docs_python_block_runs(name, line, code, tmp_path, monkeypatch):
    run_block(code, f"{name}:{line}", tmp_path, monkeypatch)


@pytest.mark.slow
def test_the_sweeps_doc_groups_give_each_group_its_own_mean(tmp_path, monkeypatch):
    # The example once aggregated with df["jain"].mean(): the whole column's
    # mean repeated in every group.
    import polars as pl

    ((name, line, code, _),) = [
        b for b in BLOCKS if b[0] == "sweeps.md" and "group_by" in b[2] and b[3] is None
    ]
    ns = run_block(code, f"{name}:{line}", tmp_path, monkeypatch)
    df, means = ns["df"], ns["means"]
    assert len(means) == 8
    for row in means.iter_rows(named=True):
        part = df.filter((pl.col("bcn.w") == row["bcn.w"]) & (pl.col("pause") == row["pause"]))
        assert len(part) == 10 and row["jain"] == pytest.approx(part["jain"].mean(), rel=1e-12)
    assert means["jain"].n_unique() > 1


def test_the_declarations_file_is_the_engines():
    # cnsim reads the schemes' declarations from a file (no engine for
    # --help, list, show); it must be what the engine declares now.
    import json

    from cnsim import _core
    from cnsim.declarations import PATH

    assert json.loads(PATH.read_text()) == json.loads(_core.scheme_declarations()), (
        "python/cnsim/declarations.json is out of date: run `python -m cnsim.docs`"
    )
