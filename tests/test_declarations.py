"""Every parameter a user meets in `cnsim show` is declared in one place.

The sections the engine declares (crates/cnsim-core/src/sections.rs, and the
schemes' tables) reach Python only through declarations.json: their record
classes are generated (cnsim.parameters), no Python source declares their
fields again, and the engine checks them (one validator). STILL_IN_PYTHON
lists the sections still declared in Python (none since issue 26); the test
fails when that list goes stale in either direction.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import cnsim
import pytest
from cnsim import topologies
from cnsim.declarations import declarations
from cnsim.scenario import analysis_sections as analysis
from cnsim.scenario import model as M

ROOT = Path(__file__).resolve().parents[1]

#: Declared by the engine: table name -> its declaration.
ENGINE = {t["name"]: t for t in [*declarations()["sections"], *declarations()["tables"]]}
#: Declared in Python alone, in the engine's format (cnsim.scenario.analysis_sections):
#: sections only the metrics read, never the engine.
ANALYSIS = analysis.SECTIONS
#: A node's keys the engine declares (its station's / bridge's per_node keys).
NODE_KEYS = {k for s in ("station", "bridge") for k in ENGINE[s]["per_node"]}

#: Sections and keys still declared in Python (model.py) and checked, in part,
#: again by the engine's config.rs: what remains of issue 26.
STILL_IN_PYTHON: set[str] = set()
#: The arrays of tables ([[nodes]], ...): sections even when empty.
ARRAYS = ("nodes", "links", "events", "routes", "ports", "workloads", "jobs")


def _shown(name: str) -> list[tuple[str, str]]:
    """(section, key) of every parameter `cnsim show NAME` prints."""
    d = tomllib.loads(cnsim.load(name).to_toml())
    out: list[tuple[str, str]] = []
    for k, v in d.items():
        if isinstance(v, dict) and k == "windows":
            out += [("windows", ik) for w in v.values() for ik in w]
        elif isinstance(v, dict):
            out += [(k, ik) for ik in v]
        elif isinstance(v, list) and (k in ARRAYS or (v and isinstance(v[0], dict))):
            out += [(k, ik) for item in v for ik in item]
        else:
            out.append(("", k))
    return sorted(set(out))


def _python_declared_fields() -> set[str]:
    """Names given a value by `Field(...)` in a class body of model.py (a
    hand-written declaration)."""
    tree = ast.parse((ROOT / "python/cnsim/scenario/model.py").read_text())
    names: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                names.add(f"{cls.name}.{stmt.target.id}")
    return names


@pytest.mark.parametrize("name", ["baseline", "flows_incast"])
def test_every_shown_parameter_is_declared_once(name: str) -> None:
    hand = _python_declared_fields()
    engine_declared: set[tuple[str, str]] = set()
    for section, key in _shown(name):
        if section in ENGINE or (section == "nodes" and key in NODE_KEYS):
            decl = (
                ENGINE["station" if key in ENGINE["station"]["per_node"] else "bridge"]
                if section == "nodes" and key in NODE_KEYS
                else ENGINE[section]
            )
            assert key in {p["name"] for p in decl["params"]}, (section, key)
            engine_declared.add((section, key))
        elif section in ANALYSIS:
            assert key in {p["name"] for p in ANALYSIS[section]["params"]}, (section, key)
            engine_declared.add((section, key))
        elif section == "topology":
            assert any(key in topologies.GENERATORS[g]._params for g in topologies.GENERATORS), key
        else:
            assert section in STILL_IN_PYTHON, f"{section}.{key}: declared nowhere known"
    # No Python class declares an engine-declared key again.
    models = {
        "": "ScenarioModel",
        "links": "Link",
        "routes": "Route",
        "ports": "PortEntry",
        "events": "Event",
        "workload": "Workload",
        "defaults": "Defaults",
        "bridge": "BridgeDefaults",
        "station": "StationDefaults",
        "pause": "Pause",
        "hotspot": "Hotspot",
        "trace": "Trace",
        "stats": "Stats",
        "measure": "Measure",
        "windows": "Window",
        "fairness": "Fairness",
        "utilization": "Utilization",
        "stability": "Stability",
        "innocent": "Innocent",
        "transient": "Transient",
    }
    for section, key in engine_declared:
        cls = "_NodeFields" if section == "nodes" else models.get(section, "")
        assert f"{cls}.{key}" not in hand, f"{section}.{key} declared again in model.py"
    assert {s for s, _ in engine_declared} >= {"defaults", "pause"}


def test_generated_models_are_the_declarations() -> None:
    for section, cls in [
        ("links", M.Link),
        ("routes", M.Route),
        ("events", M.Event),
        ("workload", M.Workload),
        ("defaults", M.Defaults),
        ("bridge", M.BridgeDefaults),
        ("station", M.StationDefaults),
        ("pause", M.Pause),
        ("hotspot", M.Hotspot),
        ("trace", M.Trace),
        ("stats", M.Stats),
        ("measure", M.Measure),
        ("windows", M.Window),
        ("fairness", M.Fairness),
        ("utilization", M.Utilization),
        ("stability", M.Stability),
        ("innocent", M.Innocent),
        ("transient", M.Transient),
    ]:
        decl = ENGINE.get(section) or ANALYSIS[section]
        assert list(cls.names) == [p["name"] for p in decl["params"]]
        for p in decl["params"]:
            assert cls._params[p["name"]] is p, (section, p["name"])  # the declaration itself
    for g, cls in topologies.GENERATORS.items():
        assert cls.declaration is ENGINE[f"topology_{g}"], g
        assert list(cls.names) == [p["name"] for p in ENGINE[f"topology_{g}"]["params"]]
    assert NODE_KEYS <= set(M.Node.names)
    # A node's own keys are the engine's declaration, then its station / bridge keys.
    own = ENGINE["nodes"]["params"]
    assert list(M.Node.names[: len(own)]) == [p["name"] for p in own]
    assert all(M.Node._params[p["name"]] is p for p in own)
    assert set(M.Node.names[len(own) :]) == NODE_KEYS


def test_python_sections_left_are_the_listed_ones() -> None:
    top = set(M.TOP_KEYS)
    engine_sections = {t["name"] for t in declarations()["sections"]} | set(ANALYSIS)
    schemes = {t["name"] for t in declarations()["tables"]} | {"nocm"}
    # [topology]: one engine table per generator (`topology_NAME`).
    if all(f"topology_{g}" in ENGINE for g in topologies.GENERATORS):
        engine_sections.add("topology")
    own = {p["name"] for p in ENGINE[""]["params"]}  # the top level's keys
    left = {k for k in top if k not in engine_sections | schemes | own}
    assert left == STILL_IN_PYTHON
    # The top level's keys are the engine's declarations themselves.
    for p in M.TOP["params"]:
        assert p in ENGINE[""]["params"], p["name"]
    assert M.ROUTING in ENGINE[""]["params"]
    assert not set(ANALYSIS) & {t["name"] for t in declarations()["sections"]}, "declared twice"


def test_engine_rule_errors_after_set_name_the_set_key() -> None:
    """An engine rule broken by a `--set` names it as every `--set` error
    does, also after the run choices change (the runner's seeds)."""
    from cnsim.errors import ScenarioError
    from cnsim.scenario import apply_sets

    sc = apply_sets(cnsim.load("baseline"), ["pause.xoff_bytes=100000"])
    for s in (sc, sc.replace(seeds=[3])):
        with pytest.raises(ScenarioError) as e:
            s.engine_config_checked()
        assert str(e.value) == (
            "--set pause.xoff_bytes: pause.xon_bytes / pause.xoff_bytes: 130000 / 100000 not allowed; "
            "expected xon_bytes <= xoff_bytes"
        )
    # Without a --set, the engine's message is unchanged.
    with pytest.raises(ScenarioError, match=r"^pause\.xon_bytes / pause\.xoff_bytes: "):
        cnsim.load("baseline", **{"pause.xoff_bytes": 100000}).engine_config_checked()


def test_set_naming_goes_by_the_parameter_at_fault_not_the_message_text() -> None:
    """`--set qcn={...}` (the qcn table as a whole, for a sweep of qcn and
    qcn2pt) beside a file whose [qcn2pt] breaks a rule: the engine's
    message starts with `qcn` (`qcn2pt.pmin / ...`) but the parameter at
    fault is another table's, so the `--set` key is named before it. A
    match on the message's first letters took it for the key set and
    named no `--set` key at all."""
    from cnsim.errors import ScenarioError
    from cnsim.scenario import Scenario, apply_sets

    raw = {**cnsim.load("baseline").raw, "scheme": "qcn2pt", "qcn2pt": {"pmin": 0.5, "pmax": 0.1}}
    sc = apply_sets(Scenario(raw), ["qcn={}"], schemes=["qcn"])
    with pytest.raises(ScenarioError) as e:
        sc.engine_config_checked()
    assert str(e.value) == (
        "--set qcn: qcn2pt.pmin / qcn2pt.pmax: 0.5 / 0.1 not allowed; expected pmin <= pmax"
    )
    assert (e.value.param, e.value.option) == ("qcn2pt.pmin / qcn2pt.pmax", "--set")
    # The key set as a whole table holds the parameter at fault: named once.
    raw = {**cnsim.load("baseline").raw, "scheme": "qcn"}
    sc = apply_sets(Scenario(raw), ["qcn={pmin=0.5, pmax=0.1}"])
    with pytest.raises(ScenarioError) as e:
        sc.engine_config_checked()
    assert str(e.value) == "--set qcn.pmin / qcn.pmax: 0.5 / 0.1 not allowed; expected pmin <= pmax"


def test_errors_keep_the_parameter_apart_from_the_message() -> None:
    """The parameter an error names travels beside its one-line text, from
    the engine (EngineConfigError.path), a declared table (TableError) or
    a Python check: nothing recovers it from the text."""
    from cnsim.errors import ScenarioError

    cases = [
        ({"pause.xoff_bytes": 100000}, "pause.xon_bytes / pause.xoff_bytes"),  # an engine rule
        ({"nodes.S1.load": 2.0}, "nodes.S1.load"),  # a declared table's range
        ({"nodes.S1.dest": "S1"}, "nodes.S1.dest"),  # a Python check
    ]
    for changes, param in cases:
        with pytest.raises(ScenarioError) as e:
            cnsim.load("baseline", **changes).engine_config_checked()
        assert e.value.param == param, str(e.value)
        assert str(e.value).startswith(f"{param}: ")


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        (
            "max_series_keys",
            2_000_000,
            "stats.max_series_keys: 2000000 is not allowed; expected an integer >= 0",
        ),
        (
            "max_series_keys",
            1_000_001,
            "stats.max_series_keys: 1000001 is not allowed; expected an integer >= 0",
        ),
    ],
)
def test_engine_checks_stats_from_its_declaration(key: str, value: object, line: str) -> None:
    """The engine's check of [stats] comes from its declaration: a config
    that bypasses the Python model is refused, naming the parameter (a
    negative count or `per_flow = "auto"`, which the Python layer resolves,
    are refused before, by the engine config's types)."""
    from cnsim import _core

    cfg = cnsim.load("baseline").engine_config()
    cfg[key] = value
    with pytest.raises(ValueError) as e:
        _core.check_config(cfg)
    assert str(e.value).startswith(line), str(e.value)


def test_engine_checks_fattree_routing_from_the_topology_declaration() -> None:
    """The engine config's fat-tree arity is checked against `[topology]`'s
    declaration (sections::topology_fattree's k), whoever wrote the config."""
    from cnsim import _core

    cfg = cnsim.load("fattree_hotspot").engine_config_checked()
    assert cfg["routing"]["kind"] == "fattree"
    _core.check_config(cfg)
    with pytest.raises(ValueError) as e:
        _core.check_config(cfg | {"routing": {"kind": "fattree", "k": 65}})
    assert str(e.value) == "routing.k: 65 is not allowed; expected an integer >= 2 and <= 64"


def test_a_topology_is_checked_by_the_engine_as_read() -> None:
    """[topology] reaches the engine's check as Python read it: an integer
    written 4.0 (as TOML users do) is the integer 4 there too."""
    raw = tomllib.loads(cnsim.load("fattree_hotspot").to_toml())
    raw["topology"]["k"] = float(raw["topology"]["k"])
    cnsim.Scenario(raw, seeds=[0]).engine_config_checked()
