"""Fuzz harness (hypothesis) over what users give cnsim: scenario files
(built-in ones with random keys changed, deleted or added, and damaged TOML
text) and `--set KEY=VALUE` strings. Every input must give a valid scenario
(which then runs, for a sample of them) or one ScenarioError line; any other
exception, a multi-line message, a panic or an abort is a failure.

Run by tests/test_fuzz.py within a budget on every CI run; for a long
campaign:

    python tests/fuzz.py --examples 40000      # per property; prints the counts
"""

from __future__ import annotations

import copy
import sys
import tomllib
from importlib import resources
from typing import Any

import cnsim
from cnsim.scenario import apply_sets, builtin_names
from cnsim.scenario import model as M
from cnsim.schemes import SCHEMES, TABLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BUILTIN = {n: (resources.files("cnsim") / "scenarios" / f"{n}.toml").read_text() for n in builtin_names()}
RAW = {n: tomllib.loads(t) for n, t in BUILTIN.items()}

SECTIONS: dict[str, Any] = {
    "defaults": M.Defaults,
    "bridge": M.BridgeDefaults,
    "station": M.StationDefaults,
    "pause": M.Pause,
    "measure": M.Measure,
    "transient": M.Transient,
    "stability": M.Stability,
    "innocent": M.Innocent,
    "hotspot": M.Hotspot,
    "trace": M.Trace,
    "fairness": M.Fairness,
    "utilization": M.Utilization,
    "stats": M.Stats,
    "workload": M.Workload,
    **TABLES,
}
KEYS = sorted(
    [f"{s}.{f.alias or n}" for s, m in SECTIONS.items() for n, f in m.model_fields.items()]
    + [f.alias or n for n, f in M.ScenarioModel.model_fields.items()]
    + [
        "topology.k",
        "topology.n",
        "topology.degree",
        "topology.variant",
        "topology.generator",
        "topology.load",
        "topology.leaves",
        "topology.spines",
        "topology.hosts_per_leaf",
        "topology.oversubscription",
        "topology.spine_gbps",
        "topology.pattern",
        "topology.fan_in",
        "topology.hot_host",
        "topology.hot_fraction",
        "topology.pattern_seed",
    ]
    + ["nodes.S1.load", "nodes.S1.dest", "nodes.B5.buffer_bytes", "nodes.H0.load", "nodes.X0_0.start_ms"]
    + ["windows.fairness.end_ms", "links.B5-D.rate_gbps", "nosuch", "bcn.nosuch", "nodes.nosuch.load"]
)

#: Values a careless user, a script or a hostile file might give.
values = st.one_of(
    st.sampled_from(
        [
            0,
            1,
            -1,
            2,
            3,
            12,
            64,
            65535,
            65536,
            2**31,
            2**63,
            2**64,
            10**30,
            0.0,
            -0.0,
            0.5,
            1e-12,
            1e-7,
            1e-300,
            1e9,
            1e12,
            1e300,
            float("inf"),
            float("-inf"),
            float("nan"),
            True,
            False,
            "",
            "uniform",
            "flow",
            "cp",
            "drop",
            "auto",
            "fattree",
            "innocent",
            "B",
            "S1",
            "D",
            "H",
            "B5->D",
            "S1|D",
            "S1|B5->D",
            "qcn",
            "[red]x[/]",
            "../../x",
            "/tmp/abs",
            "a\nb",
            "é\u0000",
            [],
            [1, 2],
            ["B5->D"],
            ["x"],
            {},
            {"a": 1},
            {"S1": 1.0},
            {"generator": "fattree", "k": 12, "n": 3},
            {"generator": "innocent", "variant": "C", "degree": 20},
            {"generator": "leafspine", "leaves": 3, "spines": 2, "hosts_per_leaf": 2, "load": 0.5},
            {"generator": "leafspine", "leaves": 4, "spines": 2, "pattern": "incast", "fan_in": 3},
            {"hotspot": "S1", "fraction": 0.5},
            {"hotspot": "B5", "fraction": 2},
            [{"bridge": "B5", "dst": "D", "via": "D"}],
            [{"bridge": "B5", "dst": "S1", "via": "D"}],
            "leafspine",
            "ecmp",
            "permutation",
            "incast",
            "hotspot",
            [[[[[]]]]],
            "poisson",
            "long_lived",
            "websearch",
            "hadoop",
            "H0",
            ["H0", "H1"],
            {"kind": "poisson", "load": 0.3},
            {"kind": "incast", "fan_in": 3, "size_bytes": 3000},
            {"kind": "permutation", "size_bytes": 1},
            {"kind": "long_lived", "fan_in": 2},
            "dynamic",
        ]
    ),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)


def _one_line(e: BaseException) -> None:
    msg = str(e)
    assert msg and "\n" not in msg, f"not one line: {msg!r}"


def check_raw(raw: dict[str, Any], run: bool) -> bool:
    """Validates `raw` (and runs 1 ms of it when `run`); True when accepted."""
    try:
        sc = cnsim.Scenario(raw)
        sc.engine_json()
    except cnsim.ScenarioError as e:
        _one_line(e)
        return False
    if run:
        try:
            short = sc.replace(duration_ms=min(sc.duration_ms, 1.0), seeds=[sc.seeds[0]])
            cnsim.run(short, progress=False)
        except cnsim.ScenarioError as e:
            _one_line(e)
    return True


def _leaves(d: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _leaves(v, (*prefix, k)) or [(*prefix, k)]
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _leaves(v, (*prefix, i)) or [(*prefix, i)]
    return out


def _set(d: Any, path: tuple[Any, ...], value: Any, delete: bool) -> None:
    for p in path[:-1]:
        d = d[p]
    if delete:
        del d[path[-1]]
    else:
        d[path[-1]] = value


@st.composite
def mutated_scenarios(draw: Any) -> dict[str, Any]:
    raw = copy.deepcopy(RAW[draw(st.sampled_from(sorted(RAW)))])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["leaf", "leaf", "key", "delete", "scheme"]))
        if op == "scheme":
            raw["scheme"] = draw(st.sampled_from([*SCHEMES, "nosuch", "", "BCN"]))
        elif op == "key":
            key = draw(st.sampled_from(KEYS)).split(".")
            d = raw
            for part in key[:-1]:
                if not isinstance(d.get(part), dict):
                    d[part] = {}
                d = d[part]
            d[key[-1]] = copy.deepcopy(draw(values))
        else:
            leaves = _leaves(raw)
            if leaves:
                path = draw(st.sampled_from(leaves))
                _set(raw, path, copy.deepcopy(draw(values)), delete=op == "delete")
    return raw


@st.composite
def damaged_toml(draw: Any) -> str:
    text = BUILTIN[draw(st.sampled_from(sorted(BUILTIN)))]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["cut", "insert", "nest"]))
        if op == "cut":
            text = text[:i] + text[i + draw(st.integers(1, 40)) :]
        elif op == "insert":
            text = (
                text[:i]
                + draw(st.sampled_from(["=", "[", "]", '"', "\n", "x = ", "[[nodes]]\n", "\u0000"]))
                + text[i:]
            )
        else:
            text += "\nz = " + "[" * draw(st.integers(100, 5000)) + "]" * draw(st.integers(0, 10))
    return text


set_strings = st.builds(
    lambda k, v: f"{k}={v}",
    st.one_of(st.sampled_from(KEYS), st.text(max_size=10)),
    st.one_of(
        st.sampled_from(
            ["1", "-1", "0", "1e309", "inf", "nan", "true", "[abc]", "[1,", "{a=1}", '"x"', "", "1e-7"]
        ),
        st.text(max_size=12),
    ),
)

BASE = cnsim.load("baseline", seeds=[0])
STATS = {"scenarios": 0, "accepted": 0, "sets": 0, "toml": 0}


def property_scenario(raw: dict[str, Any], run: bool) -> None:
    STATS["scenarios"] += 1
    STATS["accepted"] += check_raw(raw, run)


def property_set(text: str) -> None:
    STATS["sets"] += 1
    try:
        apply_sets(BASE, [text]).engine_json()
    except cnsim.ScenarioError as e:
        _one_line(e)


def property_toml(text: str) -> None:
    STATS["toml"] += 1
    from cnsim.scenario.files import _read_toml

    try:
        check_raw(_read_toml(text, "fuzz.toml"), run=False)
    except cnsim.ScenarioError as e:
        _one_line(e)


def make_tests(examples: int) -> list[Any]:
    """The three properties with `examples` inputs each (hypothesis)."""
    s = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    return [
        s(given(raw=mutated_scenarios(), run=st.integers(0, 24).map(lambda x: x == 0))(property_scenario)),
        s(given(text=set_strings)(property_set)),
        s(given(text=damaged_toml())(property_toml)),
    ]


def main(argv: list[str]) -> int:
    examples = int(argv[argv.index("--examples") + 1]) if "--examples" in argv else 1000
    for test in make_tests(examples):
        test()
    total = STATS["scenarios"] + STATS["sets"] + STATS["toml"]
    print(
        f"fuzz: {total:,} inputs, none escaped: {STATS['scenarios']:,} scenarios "
        f"({STATS['accepted']:,} accepted), {STATS['sets']:,} --set strings, {STATS['toml']:,} damaged TOML files"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
