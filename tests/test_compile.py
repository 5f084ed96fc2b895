"""One compile per run: the scenario is compiled by the engine once
(`Scenario.compiled`, a `_core.Compiled`), and every seed runs from that
compiled configuration without another check. Counted here by the calls a
whole `cnsim run` makes into the engine (`cnsim._core`); also: the compiled
configuration pickles (Dask), a per-node key of the declaration is saved
without a Python change, and `--duration` is fitted with the `--set` values
(issue 37 item 16)."""

from __future__ import annotations

import math
import pickle
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import cnsim
import cnsim._core as _core
import pytest
from cnsim.errors import ScenarioWarning
from typer.testing import CliRunner

#: Simulation methods that step a run (called every STEP_S of wall time,
#: however long the run): not a crossing per run, so not counted.
STEPPING = {"run_for", "run_until"}


class _CountingSimulation:
    """`_core.Simulation`, counting its construction and every method call."""

    def __init__(self, real: Any, counts: Counter[str], *args: Any, **kwargs: Any) -> None:
        counts["Simulation"] += 1
        self._sim = real(*args, **kwargs)
        self._counts = counts

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._sim, name)
        if callable(value) and name not in STEPPING:
            self._counts[f"Simulation.{name}"] += 1
        return value


@pytest.fixture
def crossings(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every call into `cnsim._core` from here on, by name."""
    counts: Counter[str] = Counter()
    for name in dir(_core):
        obj = getattr(_core, name)
        if name == "Simulation":
            real = obj
            monkeypatch.setattr(
                _core, name, lambda *a, _r=real, **k: _CountingSimulation(_r, counts, *a, **k)
            )
        elif callable(obj) and not isinstance(obj, type) and not name.startswith("__"):

            def counted(*a: Any, _f: Any = obj, _n: str = name, **k: Any) -> Any:
                counts[_n] += 1
                return _f(*a, **k)

            monkeypatch.setattr(_core, name, counted)
    return counts


def test_a_run_of_two_seeds_compiles_once_and_crosses_at_most_thirteen_times(crossings, tmp_path):
    """`cnsim run baseline --seeds 2` (shortened): one compile, one
    simulation and one output per seed, the engine version, and the files
    the engine writes. Was 17 crossings (issue 38): the config checked
    3 + seeds times and the network built once only to check it."""
    from cnsim.cli import app

    out = tmp_path / "out"
    res = CliRunner().invoke(
        app,
        ["run", "baseline", "--seeds", "2", "--duration", "2", "--no-report", "--out", str(out)],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    assert crossings["compile"] == 1, crossings
    assert "check_config" not in crossings, crossings
    assert crossings["Simulation"] == 2 and crossings["Simulation.output"] == 2, crossings
    # What is left: the files (one writer call each) and the engine's version.
    writes = crossings["write_parquet"] + crossings["write_timeseries"]
    assert set(crossings) <= {
        "compile",
        "Simulation",
        "Simulation.output",
        "version",
        "write_parquet",
        "write_timeseries",
    }
    assert sum(crossings.values()) == 1 + 2 * 2 + crossings["version"] + writes
    # seven files; the version once per process (cached: 0 if asked before)
    assert crossings["version"] <= 1 and writes == 7, crossings
    assert sum(crossings.values()) <= 13, crossings


def test_a_scenario_compiles_once_however_often_it_is_asked(crossings):
    sc = cnsim.load("baseline", seeds=[0])
    sc.compiled()
    sc.engine_config_checked()
    sc.engine_warnings()
    sc.paths([("S1", "D")])
    assert crossings["compile"] == 1, crossings


def test_the_compiled_configuration_pickles_and_runs_the_same():
    """A worker process (Dask) gets the compiled configuration by pickle:
    read back unchecked, it runs to the same results."""
    sc = cnsim.load("baseline", seeds=[0]).replace(duration_ms=2.0)
    compiled = sc.compiled()
    back = pickle.loads(pickle.dumps(compiled))
    assert isinstance(back, _core.Compiled)
    assert back.json() == compiled.json() and back.warnings == compiled.warnings
    from cnsim.engine import run_seed

    one = run_seed(compiled, 0)
    two = run_seed(back, 0)
    assert one.frames == two.frames
    assert one.series_buffer() == two.series_buffer()


def test_seed_0_runs_on_the_network_the_compile_built_to_check_it():
    """The compile builds the network (seed 0) to check it and keeps it for
    the first run of seed 0, which runs on it as on one built anew (issue
    39: not built twice); one network is kept per process, so a sweep that
    compiles every point first holds one."""
    from cnsim.engine import run_seed

    sc = cnsim.load("singlehop_hotspot", seeds=[0]).replace(duration_ms=2.0)
    compiled = sc.compiled()
    assert _core._kept(compiled)
    seed1 = run_seed(compiled, 1)  # another seed builds its own
    assert _core._kept(compiled)
    kept = run_seed(compiled, 0)
    assert not _core._kept(compiled)
    anew = run_seed(compiled, 0)
    assert kept.frames == anew.frames != seed1.frames
    assert kept.series_buffer() == anew.series_buffer()
    # A later compile's network replaces an unused one.
    first = cnsim.load("baseline", seeds=[0]).replace(duration_ms=3.0).compiled()
    second = cnsim.load("baseline", seeds=[0]).replace(duration_ms=4.0).compiled()
    assert _core._kept(second) and not _core._kept(first)


def test_the_compiled_configuration_is_the_resolved_one():
    sc = cnsim.load("baseline", seeds=[0])
    data = sc.compiled().data()
    assert data["duration_ps"] == sc.engine_config()["duration_ps"]
    assert [s["name"] for s in data["stations"]] == [s["name"] for s in sc.engine_config()["stations"]]


def test_a_compile_error_names_the_parameter():
    with pytest.raises(cnsim.ScenarioError, match=r"pause\.xon_bytes"):
        cnsim.load("baseline", **{"pause.xon_bytes": 200_000, "pause.xoff_bytes": 100_000}).compiled()


def test_a_per_node_key_of_the_declaration_is_saved_without_a_python_change(monkeypatch):
    """scenario.toml keeps every key a node sets, as the declaration lists
    them: the keys of a node's kind are read from the engine's declaration
    (`sections::node`'s kinds, `[station]` / `[bridge]`'s per_node), and a
    key added there (planted here) is saved with no list in Python to
    extend."""
    from types import SimpleNamespace

    import cnsim.scenario.core as core
    from cnsim.declarations import declarations

    sections = {t["name"]: t for t in declarations()["sections"]}
    own = sections["nodes"]["kinds"]
    assert core._STATION_ONLY == (*own["station"], *sections["station"]["per_node"])
    assert core._BRIDGE_ONLY == (*own["bridge"], *sections["bridge"]["per_node"])
    monkeypatch.setattr(core, "_STATION_ONLY", (*core._STATION_ONLY, "planted_bytes"))
    keys = dict.fromkeys(core._STATION_ONLY)
    node = SimpleNamespace(name="S1", kind="station", **{**keys, "load": 0.5, "dest": "D", "start_ms": 0.0})
    node.planted_bytes = 12345
    assert core._node_dump(node)["planted_bytes"] == 12345
    node.planted_bytes = None  # unset: the section's value, not written
    assert "planted_bytes" not in core._node_dump(node)


def test_every_per_node_key_a_node_sets_is_saved_and_read_back():
    """Every per-node key the engine declares ([station] / [bridge] per_node)
    and every key of a node's kind, set on a node, survives scenario.toml."""
    from cnsim.scenario.model import _BRIDGE_ONLY, _STATION_ONLY

    sc = cnsim.load("baseline")
    raw = sc.raw
    values = {
        "stop_ms": 90.0,
        "nic_buffer_bytes": 123_456,
        "rlq_bytes": 654_321,
        "processing_us": 3.5,
        "buffer_mode": "shared",
        "buffer_bytes": 777_777,
        "latency_us": 1.25,
        "ports": 9,
        "priority": 5,
        "strict_priorities": [6, 2],
        "ets_weights": [1, 2, 3, 4, 5, 6, 7, 8],
    }
    for n in raw["nodes"]:
        keys = _STATION_ONLY if n["kind"] == "station" else _BRIDGE_ONLY
        for k in keys:
            if k in values:
                n[k] = values[k]
    saved = cnsim.Scenario(raw).resolved_raw()
    for n in saved["nodes"]:
        keys = _STATION_ONLY if n["kind"] == "station" else _BRIDGE_ONLY
        for k in keys:
            assert k in n, (n["name"], k)
            if k in values:
                assert n[k] == values[k], (n["name"], k)
    assert set(values) <= set(_STATION_ONLY) | set(_BRIDGE_ONLY)  # none left untested


def test_duration_is_fitted_after_the_set_values(recwarn):
    """Issue 37 item 16: `--duration 20 --set hotspot.start_ms=1 --set
    hotspot.end_ms=20` warned that the hotspot starts at 100 ms (the file's
    value, fitted before the --set values were applied)."""
    from cnsim.cli import _scenario

    warnings.simplefilter("always")
    sc = _scenario(
        "singlehop_hotspot", None, None, ["hotspot.start_ms=1", "hotspot.end_ms=20"], None, None, 20.0
    )
    assert sc.model.hotspot.start_ms == 1 and sc.duration_ms == 20
    said = [str(w.message) for w in recwarn if issubclass(w.category, ScenarioWarning)]
    assert not any("hotspot" in m for m in said), said
    # A window the --set values leave past the run is still said, once.
    _scenario("singlehop_hotspot", None, None, ["hotspot.start_ms=30", "hotspot.end_ms=40"], None, None, 20.0)
    said = [str(w.message) for w in recwarn if issubclass(w.category, ScenarioWarning)]
    assert sum("the hotspot starts at 30 ms" in m for m in said) == 1, said


def test_the_cli_warns_about_the_value_that_runs(cli, tmp_path: Path):
    r = cli(
        "run", "singlehop_hotspot", "--duration", "20", "--set", "hotspot.start_ms=1",
        "--set", "hotspot.end_ms=20", "--no-report", "--out", str(tmp_path / "x"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "starts at 100 ms" not in r.stderr, r.stderr


# ------------------------------------------------------------------ four routes, one answer
def _declared_keys() -> list[tuple[str, dict[str, Any]]]:
    """Every declared parameter a scenario's sections hold (dotted key and
    its declaration), the schemes' tables included."""
    from cnsim.declarations import declarations

    d = declarations()
    out = []
    for t in [*d["sections"], *d["tables"]]:
        name = t["name"]
        if name in ("", "nodes", "links", "events", "routes", "windows") or name.startswith("topology"):
            continue  # arrays, named windows and generators: keyed by entry, tested elsewhere
        out += [(f"{name}.{q['name']}", q) for q in t["params"] if not q.get("fixed")]
    return out


KEYS = _declared_keys()


def _values(q: dict[str, Any]) -> Any:
    """Values for a declared parameter: in its range, at its edges, and wrong."""
    from hypothesis import strategies as st

    t = q["type"]
    lo = (q.get("min") or {}).get("value")
    hi = (q.get("max") or {}).get("value")
    wrong = st.sampled_from([-1, "x", True] if t != "bool" else [2, "x"])
    if t in ("float", "int"):
        lo_v = lo if lo is not None else -1e6
        hi_v = min(hi if hi is not None else 1e6, 1e12)
        inside = (
            st.integers(int(math.ceil(lo_v)), int(math.floor(hi_v)))
            if t == "int"
            else st.floats(lo_v, hi_v, allow_nan=False, allow_infinity=False)
        )
        return st.one_of(inside, st.sampled_from([x for x in (lo, hi) if x is not None] or [0]), wrong)
    if t == "bool":
        return st.one_of(st.booleans(), wrong)
    if t == "choice":
        return st.one_of(st.sampled_from(q["choices"]), st.just("nosuch"))
    if t == "str":
        return st.sampled_from(["S1", "D", "", "nosuch"])
    if t == "strs":
        return st.lists(st.sampled_from(["B5->D", "S1", "S1|D", "x"]), max_size=2)
    if q["default"] is None:
        return wrong
    return st.one_of(st.just(q["default"]), wrong)


def _scheme_for(key: str) -> str | None:
    from cnsim.schemes import SCHEMES, TABLES

    table = key.partition(".")[0]
    if table not in TABLES:
        return None
    return next(n for n, (t, _) in SCHEMES.items() if t == table)


def _answer(make: Any) -> tuple[str, Any]:
    """("ok", the compiled configuration's JSON) or ("refused", the parameter named)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            sc = make()
            return "ok", sc.compiled().json()
        except cnsim.ScenarioError as e:
            return "refused", e.param


@pytest.mark.parametrize("key", [k for k, _ in KEYS])
def test_a_value_gets_the_same_answer_from_a_file_set_grid_and_the_api(key, tmp_path_factory):
    """Issue 38: every declared parameter, given any value, is accepted with
    the same compiled configuration, or refused naming the same parameter,
    whether it comes from a scenario file, `--set`, `cnsim sweep --grid` or
    `Scenario.replace`."""
    import copy

    import tomli_w
    from cnsim.scenario import apply_sets, load
    from cnsim.scenario.overrides import set_dotted
    from cnsim.sweeps.grid import build_points, parse_grid
    from hypothesis import given, settings

    q = dict(KEYS)[key]
    base_name = "flows_incast" if key.startswith("workload.") else "baseline"
    scheme = _scheme_for(key)
    base = load(base_name, seeds=[0], **({"scheme": scheme} if scheme else {}))
    where = tmp_path_factory.mktemp("file")

    @settings(max_examples=4, deadline=None, database=None)
    @given(value=_values(q))
    def check(value: Any) -> None:
        literal = tomli_w.dumps({"v": value}).partition("=")[2].strip()

        def from_file() -> Any:
            raw = copy.deepcopy(base.raw)
            set_dotted(raw, key, value)
            path = where / "s.toml"
            path.write_text(tomli_w.dumps(raw))
            return load(str(path))

        routes = {
            "file": from_file,
            "--set": lambda: apply_sets(base, [f"{key}={literal}"]),
            "--grid": lambda: build_points(base, parse_grid([f"{key}={literal}"]))[0].scenario,
            "api": lambda: base.replace(**{key: value}),
        }
        answers = {name: _answer(make) for name, make in routes.items()}
        assert len(set(answers.values())) == 1, (value, answers)

    check()
