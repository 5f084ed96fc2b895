"""Fuzz harness (hypothesis) over what users give cnsim: scenario files
(built-in ones with random keys changed, deleted or added, and damaged TOML
text), `--set KEY=VALUE` strings, and flow scenarios: a small leaf-spine
with a random workload (every kind; CDFs built in, inline, and files good,
damaged, in percentages, UTF-16 or binary), every scheme with its
parameters at, inside and beyond their declared bounds, PAUSE, buffers.
Every input must give a valid scenario or one ScenarioError line; every
accepted flow scenario is run by the engine to its end (a hang of more than
10 s fails), its frames must be conserved (generated = delivered + dropped
+ in flight) and every finished flow's slowdown must be >= 1; any other
exception, a multi-line message, a panic or an abort is a failure.

Issue 37 adds three properties over what a run leaves on disk: traced
runs (`traces`: oddly named nodes, every [trace] key and filter, capture
port lists, caps; saved, checked by `cnsim check`, reopened to the same
summary, events and captures), seed lists of every length (`seeds`:
zero-flow seeds, 19-digit seeds, a count or a list, duplicates; a campaign
also draws 100, 1,000 and 3,400 seeds) and results directories tampered
with file by file (`tamper`: each must be refused naming a file, or read
back exactly).

Run by tests/test_fuzz.py within a budget on every CI run; a campaign of
every property (README.md: 15,000 inputs each, 105,000 in all), or one
property at a time:

    nice -n 19 python tests/fuzz.py --examples 15000 --escapes escapes.json > campaign.log 2>&1
    python tests/fuzz.py --only flows --examples 100000 --escapes esc.json
    python tests/fuzz.py --only scenarios --examples 25000   # and sets, toml, traces, seeds, tamper

The campaign of 2026-11-26 (main at 7b0a83f): 100,000 flow scenarios
(53,963 accepted and run to their end, frames conserved), 25,000 scenario
files (4,343 accepted), 25,000 `--set` strings and 25,000 damaged TOML
files, 0 escapes; the flows took 22 CPU minutes (49 minutes of wall time on
a machine shared with other work), the other three 4.4 CPU minutes.

The campaign of issue 37 (2026-11-27/28, main at 4f7bf33), 15,000 inputs per
property, 105,000 in all, 0 escapes: scenarios (114 s), sets (66 s), toml
(138 s), flows (176 s), traces (1,646 s: every one run, saved, checked and
reopened), tamper (287 s: 14,105 of the tampered directories refused naming
a file, the other 895 read back exactly) and seeds (3,135 s: 7,231 of the
seed lists run, saved and reopened, the others refused with one line); each
property in its own niced process on the second core.
"""

from __future__ import annotations

import copy
import re
import sys
import tomllib
from importlib import resources
from typing import Any

import cnsim
from cnsim import metrics as cmetrics
from cnsim.scenario import apply_sets, builtin_names
from cnsim.scenario import model as M
from cnsim.schemes import SCHEMES, TABLES, declarations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# flows_pods is left out: a 6,144-host fabric (its size is its point, not its format) makes
# each example seconds; its format is the other flow scenarios'.
BUILTIN = {
    n: (resources.files("cnsim") / "scenarios" / f"{n}.toml").read_text()
    for n in builtin_names()
    if n not in ("flows_pods", "hpcc_fattree")
}
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
    [f"{s}.{n}" for s, m in SECTIONS.items() for n in m.names]
    + list(M.TOP_KEYS)
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

# ------------------------------------------------------------------ flows

#: CDF files written once for the flow property: good ones, percentages,
#: and every damaged kind (name -> bytes).
CDF_FILES: dict[str, bytes] = {
    "good.cdf": b"1000 0\n5000 0.6\n200000 1\n",
    "pct.cdf": b"# percentages\n1500 0\n20000 50\n1000000 100\n",
    "tiny.cdf": b"1 0\n64 1\n",
    "one.cdf": b"1 0\n1 1\n",
    "zero.cdf": b"0 0\n0 1\n",
    "mixed.cdf": b"1000 0\n2000 0.5\n3000 100\n",
    "utf16.cdf": "1000 0\n2000 1\n".encode("utf-16"),
    "binary.cdf": bytes(range(256)),
    "empty.cdf": b"",
    "single.cdf": b"1000 1\n",
    "decreasing.cdf": b"5000 0\n1000 1\n",
    "notone.cdf": b"1000 0\n2000 0.9\n",
    "huge.cdf": b"1 0\n1099511627776 1\n",
    "toohuge.cdf": b"1 0\n1e30 1\n",
    "words.cdf": b"a b\nc d\n",
    "three.cdf": b"1 2 3\n4 5 6\n",
    "nan.cdf": b"nan 0\n1000 1\n",
}
_CDF_DIR: list[str] = []


def cdf_dir() -> str:
    """A directory holding CDF_FILES (made once per process)."""
    if not _CDF_DIR:
        import tempfile
        from pathlib import Path

        d = Path(tempfile.mkdtemp(prefix="cnsim-fuzz-cdf-"))
        for name, data in CDF_FILES.items():
            (d / name).write_bytes(data)
        (d / "adir.cdf").mkdir()
        _CDF_DIR.append(str(d))
    return _CDF_DIR[0]


def _bound_values(p: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """A declared scheme parameter's values: (at and inside its bounds,
    beyond them or of another type)."""
    if p["type"] == "bool":
        return [False, True], [1, "yes"]
    if p["type"] == "choice":
        return list(p["choices"]), ["nosuch", 0]
    good: list[Any] = [p["default"]]
    bad: list[Any] = [2**63 - 1, 1e308, -1e308, float("inf"), float("nan"), "1", True]
    lo, hi = p["min"], p["max"]
    for v in (1, 0, -1, 2**32):
        inside = (lo is None or v > lo["value"] or (v == lo["value"] and lo["inclusive"])) and (
            hi is None or v < hi["value"] or (v == hi["value"] and hi["inclusive"])
        )
        (good if inside else bad).append(v)
    for b, sign in ((lo, 1), (hi, -1)):
        if b is not None:
            v = b["value"]
            (good if b["inclusive"] else bad).append(v)
            good.append(v + sign * max(abs(v) * 1e-9, 1e-12))
            bad.append(v - sign * max(abs(v) * 1e-9, 1e-12))
            good.append(v * 2 if sign > 0 and v > 0 else v / 2)
    if p["type"] == "int":
        good = [int(v) if isinstance(v, float) and abs(v) < 1e19 else v for v in good]
        good = [v for v in good if isinstance(v, int) and (lo is None or v >= lo["value"])]
        good = [v for v in good if hi is None or v <= hi["value"]] or [p["default"]]
        bad += [1.5]
    return good, bad


SCHEME_VALUES = {
    t["name"]: {p["name"]: _bound_values(p) for p in t["params"] if not p["fixed"]}
    for t in declarations()["tables"]
}

wild = st.sampled_from([0, -1, 1e300, float("nan"), float("inf"), "x", True, [], {}, None])

#: Whether the scenario being drawn takes bad values (a quarter of them do).
_BAD = [False]


def _pick(draw: Any, good: list[Any], bad: list[Any] | None = None, wild_ok: bool = True) -> Any:
    """A good value; in a bad scenario, a third of the time one of `bad` or (`wild_ok`) a wild one."""
    if _BAD[0] and draw(st.integers(0, 2)) == 2:
        if bad and (not wild_ok or draw(st.booleans())):
            return draw(st.sampled_from(bad))
        if wild_ok:
            return draw(wild)
    return draw(st.sampled_from(good))


@st.composite
def workloads(draw: Any, hosts: list[str]) -> dict[str, Any]:
    kind = _pick(draw, ["poisson", "incast", "permutation", "long_lived"], ["nosuch", "", "Poisson"])
    w: dict[str, Any] = {"kind": kind, "max_flows": _pick(draw, [20_000, 2_000, 10, 1], [0, -1, 5_000_000])}
    if kind == "poisson" or draw(st.integers(0, 3)) == 3:
        choice = draw(st.integers(0, 3))
        files = ["good.cdf", "pct.cdf", "tiny.cdf", "one.cdf"]
        if choice == 1:
            w["cdf"] = _pick(draw, ["websearch", "hadoop"], ["nosuch"])
        elif choice == 2:
            bad = [f for f in CDF_FILES if f not in files] + ["adir.cdf", "missing.cdf"]
            w["cdf"] = cdf_dir() + "/" + _pick(draw, files, bad, wild_ok=False)
        elif choice == 3:
            w["cdf"] = _pick(
                draw,
                [[[100, 0], [30_000, 1]], [[1, 0.0], [1, 1.0]], [[100, 0], [200, 0.5], [1e6, 1]]],
                [[[0, 0], [0, 1]], [[100, 0], [50, 1]], [[100, 0.5]], [["1", 0], [2, 1]], [1, 2], []],
            )
        w["load"] = _pick(draw, [0.5, 0.01, 0.1, 0.3, 0.9, 1.0], [1.5, -0.1, 0])
    if kind in ("incast", "long_lived") or draw(st.integers(0, 4)) == 4:
        w["fan_in"] = _pick(draw, list(range(1, len(hosts))) or [1], [0, len(hosts) + 1, 70000])
        if draw(st.booleans()):
            w["receiver"] = _pick(draw, hosts, ["L0", "nosuch"])
    if kind != "poisson" and draw(st.booleans()):
        w["size_bytes"] = _pick(draw, [1, 1499, 1500, 1501, 30_000, 200_000, 2**40], [0, 2**41])
    if kind == "incast" and draw(st.booleans()):
        w["period_us"] = _pick(draw, [5.0, 0.5, 20.0, 100.0, 1e-3, 1e-6], [1e-7, 0])
    if draw(st.booleans()):
        w["start_ms"] = _pick(draw, [0.0, 0.01, 0.1], [0.5, 5.0, -1])
    if draw(st.booleans()):
        w["end_ms"] = _pick(draw, [0.2, 0.5, 3.0], [0.0, 0.05])
    if draw(st.integers(0, 3)) == 3:
        sub = hosts[: draw(st.integers(2, max(2, len(hosts))))]
        w["hosts"] = _pick(draw, [sub], [[*hosts[:2], hosts[0]], ["L0", *hosts], ["nosuch"], hosts[:1], []])
    if draw(st.integers(0, 4)) == 4:
        w["ack_every"] = _pick(draw, [1, 2, 16, 65535], [0, 65536])
    if draw(st.integers(0, 4)) == 4:
        w["rto_us"] = _pick(draw, [4000.0, 100.0, 10.0, 1.0], [0, 1e-3, 1e-9])
    if draw(st.integers(0, 4)) == 4:
        w["end_when_done"] = _pick(draw, [True, False], [1, "no"])
    return w


@st.composite
def flow_scenarios(draw: Any) -> dict[str, Any]:
    """A small leaf-spine with transport flows, every scheme, its parameters at and beyond their bounds."""
    _BAD[0] = draw(st.integers(0, 3)) == 3
    leaves = draw(st.integers(1, 3))
    per_leaf = draw(st.integers(2 if leaves == 1 else 1, 3))
    hosts = [f"H{i}" for i in range(leaves * per_leaf)]
    scheme = draw(st.sampled_from([*SCHEMES, "pause"]))
    raw: dict[str, Any] = {
        "name": "fuzzflows",
        "duration_ms": _pick(draw, [1.0, 0.2, 0.5, 2.0], [0, -1, 1e12]),
        "bin_us": draw(st.sampled_from([10.0, 50.0, 100.0])),
        "scheme": scheme,
        "topology": {
            "generator": "leafspine",
            "leaves": leaves,
            "spines": draw(st.integers(1, 2)),
            "hosts_per_leaf": per_leaf,
            "host_gbps": draw(st.sampled_from([10.0, 25.0, 1.0, 0.1])),
            "spine_gbps": draw(st.sampled_from([10.0, 40.0, 1.0])),
        },
        "workload": draw(workloads(hosts)),
        "bridge": {
            "buffer_mode": draw(
                st.sampled_from(["shared", "per_output", "per_input", "dynamic", "infinite"])
            ),
            "buffer_bytes": _pick(draw, [4_000_000, 1500, 30_000, 150_000], [0, 1499, -1]),
        },
    }
    if scheme != "pause":
        raw["pause"] = {"enabled": draw(st.booleans())}
    elif _BAD[0]:
        raw["pause"] = {"enabled": False}  # a contradiction
    if draw(st.booleans()):
        xoff = draw(st.sampled_from([150_000, 20_000, 100_000, 0]))
        xon = _pick(draw, [xoff // 2, 0, xoff], [xoff + 1])
        raw.setdefault("pause", {}).update(xoff_bytes=xoff, xon_bytes=xon)
    if draw(st.integers(0, 5)) == 5:
        raw["defaults"] = {"link_delay_us": _pick(draw, [1.0, 0.0, 100.0], [-1])}
    # The scheme's own table (or, sometimes, another's): 0 to 3 parameters at or beyond their bounds.
    table = SCHEMES.get(scheme, (None, ""))[0] if scheme != "pause" else None
    names = sorted(SCHEME_VALUES)
    for _ in range(draw(st.integers(0, 3))):
        t = table if table is not None and draw(st.integers(0, 4)) < 4 else draw(st.sampled_from(names))
        params = SCHEME_VALUES[t]
        if params:
            k = draw(st.sampled_from(sorted(params)))
            good, bad = params[k]
            raw.setdefault(t, {})[k] = _pick(draw, good, bad)
    if _BAD[0] and draw(st.integers(0, 3)) == 3:  # and one key of the plain harness
        key = draw(st.sampled_from(KEYS)).split(".")
        d = raw
        for part in key[:-1]:
            if not isinstance(d.get(part), dict):
                d[part] = {}
            d = d[part]
        d[key[-1]] = copy.deepcopy(draw(values))
    return raw


#: Longest an accepted flow scenario may run (issue 28: a hang is > 10 s).
HANG_S = 10.0


def run_flows(sc: Any) -> None:
    """Runs seed 0 of `sc` to its end in a worker thread (a hang fails) and
    checks what every run must hold: frames conserved, every finished
    flow's slowdown >= 1, and the metrics computed."""
    import threading

    from cnsim.engine import run_seed

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["run"] = run_seed(sc.engine_json(), sc.seeds[0])
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(HANG_S)
    if t.is_alive():
        raise AssertionError(f"hang: the run took more than {HANG_S:g} s: {sc.engine_json()[:2000]}")
    if "error" in box:
        e = box["error"]
        if isinstance(e, cnsim.ScenarioError):
            _one_line(e)
            return
        raise e
    run = box["run"]
    f = run.frames
    assert f["generated"] == f["delivered"] + f["dropped_cp"] + f["dropped_rp"] + f["in_flight"], f
    fct = cmetrics.fct_table(run) if cmetrics.has_flow_records(run) else None
    if fct is not None:
        below = [x for x in fct["slowdown"] if x is not None and x < 1 - 1e-9]
        assert not below, below
    cnsim.Results(sc, [run]).summary_dict()


BASE = cnsim.load("baseline", seeds=[0])
STATS = {
    "scenarios": 0,
    "accepted": 0,
    "sets": 0,
    "toml": 0,
    "flows": 0,
    "flows_run": 0,
    "traces": 0,
    "traces_run": 0,
    "seeds": 0,
    "seeds_run": 0,
    "tampered": 0,
    "tampered_refused": 0,
}

#: A long campaign (`main`) records escapes and goes on; a test fails at the first.
COLLECT = [False]
#: (kind, first line of the message, the input) of every escape recorded.
ESCAPES: list[tuple[str, str, Any]] = []


def _guarded(prop: Any) -> Any:
    """`prop`, whose escapes are recorded instead of raised in a campaign."""
    import functools

    @functools.wraps(prop)
    def wrapper(**kwargs: Any) -> None:
        try:
            prop(**kwargs)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:
            if not COLLECT[0]:
                raise
            first = (str(e).strip().splitlines() or [""])[0][:300]
            ESCAPES.append((type(e).__name__, first, next(iter(kwargs.values()))))

    return wrapper


@_guarded
def property_scenario(raw: dict[str, Any], run: bool) -> None:
    STATS["scenarios"] += 1
    STATS["accepted"] += check_raw(raw, run)


@_guarded
def property_set(text: str) -> None:
    STATS["sets"] += 1
    try:
        apply_sets(BASE, [text]).engine_json()
    except cnsim.ScenarioError as e:
        _one_line(e)


@_guarded
def property_toml(text: str) -> None:
    STATS["toml"] += 1
    from cnsim.scenario.files import _read_toml

    try:
        check_raw(_read_toml(text, "fuzz.toml"), run=False)
    except cnsim.ScenarioError as e:
        _one_line(e)


@_guarded
def property_flows(raw: dict[str, Any]) -> None:
    STATS["flows"] += 1
    try:
        sc = cnsim.Scenario(raw)
        sc.engine_json()
    except cnsim.ScenarioError as e:
        _one_line(e)
        return
    STATS["flows_run"] += 1
    run_flows(sc)


# ------------------------------------------------------ results (issue 37)

#: Node names people give: the separators of capture file names, non-ASCII
#: ones, names that differ only in case or in a combining accent, long ones.
ODD_NAMES = [
    "A",
    "a",
    "B-to-C",
    "A-to-B",
    "-to-",
    "to",
    "Ä",
    "ä",
    "ß",
    "Ö",
    "名前",
    "x y",
    "%41",
    "~1",
    ".dot",
    "x.seed3",
    "é",
    "e\u0301",
    "n" * 120,
    "N" * 120,
    "n" * 121,
    "S1",
    "D",
    "B",
    "",
    "a\tb",
]
TRACE_KINDS = [k for k in M.TRACE["params"] if k["name"] == "events"][0]["choices"]


@st.composite
def traced_scenarios(draw: Any) -> dict[str, Any]:
    """A small network of oddly named nodes with a random [trace]: event
    kinds and filters, capture port lists (duplicates, unknown ports), caps,
    windows and frame sizes at and beyond their bounds (a quarter of the
    scenarios take bad values); open-loop sources or RoCE flows."""
    bad = draw(st.integers(0, 3)) == 0

    def pick(good: list[Any], wrong: list[Any]) -> Any:
        return draw(st.sampled_from(good + wrong if bad else good))

    pool = ODD_NAMES if bad else [n for n in ODD_NAMES if n and "\t" not in n]
    names = draw(st.lists(st.sampled_from(pool), min_size=3, max_size=5, unique=True))
    n_bridges = draw(st.integers(1, 2)) if len(names) > 3 else 1
    bridges, stations = names[:n_bridges], names[n_bridges:]
    dst = stations[-1]
    nodes: list[dict[str, Any]] = [{"name": b, "kind": "bridge", "cp": draw(st.booleans())} for b in bridges]
    for s in stations:
        if s == dst:
            nodes.append({"name": s, "kind": "station"})
        else:
            load = draw(st.sampled_from([0.0, 1e-17, 0.0005, 0.3, 0.9]))
            nodes.append({"name": s, "kind": "station", "load": load, "dest": dst})
    links = [{"a": bridges[i], "b": bridges[i + 1]} for i in range(len(bridges) - 1)]
    links += [{"a": s, "b": draw(st.sampled_from(bridges))} for s in stations]
    ports = [f"{x['a']}->{x['b']}" for x in links] + [f"{x['b']}->{x['a']}" for x in links]
    trace: dict[str, Any] = {}
    if draw(st.integers(0, 3)):
        trace["events"] = draw(
            st.one_of(
                st.just(["all"]),
                st.lists(st.sampled_from(TRACE_KINDS), min_size=1, max_size=4, unique=True),
                *(
                    [st.lists(st.sampled_from(["drops", "", "ALL", "enqueue "]), min_size=1, max_size=2)]
                    if bad
                    else []
                ),
            )
        )
    if draw(st.integers(0, 3)):
        wrong = ["X->Y", f"{dst}->{dst}", ""] if bad else []
        trace["pcap"] = draw(st.lists(st.sampled_from([*ports, *wrong]), max_size=6))
    if draw(st.integers(0, 3)) == 0:
        trace["event_nodes"] = draw(
            st.lists(st.sampled_from(names + (["nosuch"] if bad else [])), max_size=2)
        )
    if draw(st.integers(0, 3)) == 0:
        trace["event_ports"] = draw(
            st.lists(st.sampled_from(ports + (["nosuch->x"] if bad else [])), max_size=2)
        )
    if draw(st.integers(0, 3)) == 0:
        pairs = [f"{a}|{b}" for a in stations for b in stations]
        trace["event_flows"] = draw(
            st.lists(st.sampled_from(pairs + (["x|y", "|"] if bad else [])), max_size=2)
        )
    for key, good, wrong in (
        ("from_ms", [0.0, 0.01, 0.2, 5.0], [-1.0]),
        ("to_ms", [0.02, 0.1, 1.0, 1e9], [0.0]),
        ("max_rows", [1, 3, 100, 10_000_000], [0, -1]),
        ("snaplen", [64, 65, 100, 65535], [63, 65536]),
        ("pcap_max_bytes", [1, 200, 5_000, 10**9], [0]),
    ):
        if draw(st.integers(0, 3)) == 0:
            trace[key] = pick(good, wrong)
    raw: dict[str, Any] = {
        "name": "fuzztrace",
        "duration_ms": draw(st.sampled_from([0.02, 0.05, 0.2])),
        "bin_us": 10.0,
        "scheme": draw(st.sampled_from(["nocm", "qcn", "bcn", "ecm", "qcn3pt"])),
        "seeds": draw(st.sampled_from([1, 2, [0, 7], [2**63 - 1]])),
        "pause": {"enabled": draw(st.booleans())},
        "nodes": nodes,
        "links": links,
        "trace": trace,
    }
    if draw(st.integers(0, 3)) == 0:
        raw["defaults"] = {
            "frame_bytes": pick([64, 65, 66, 1500], [63]),
            "control_frame_bytes": pick([1, 63, 64], [0]),
        }
    if draw(st.integers(0, 3)) == 0 and len(stations) >= 2:  # RoCE flows: captures of RoCEv2 frames
        raw["scheme"] = draw(st.sampled_from(["dcqcn", "dctcp", "nocm"]))
        for n in nodes:
            n.pop("load", None)
            n.pop("dest", None)
        raw["workload"] = {
            "kind": "incast",
            "fan_in": len(stations) - 1,
            "receiver": dst,
            "hosts": stations,
            "size_bytes": draw(st.sampled_from([1, 1501, 50_000])),
        }
    return raw


def _quiet_run(sc: Any, **kw: Any) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cnsim.run(sc, progress=False, jobs=1, **kw)


def saved_back(res: Any, out: Any) -> None:
    """Saves `res` into `out` and checks what issue 37 asks of it: the
    directory is whole (`cnsim check`), reopens as the same summary, every
    capture is listed once under a name of its own with its port and seed
    in its headers, the event trace reads back whole."""
    from cnsim.reopen import check_run as check_results
    from cnsim.trace import pcap_header

    res.save(out, report=False)
    d = check_results(out)  # what `cnsim check` does: the run reopened, its summary computed again
    assert d.ok, d.problems
    back = d.results
    assert back.summary_dict() == res.summary_dict()
    caps = back.trace.captures() if back.trace is not None else []
    assert len({c["file"].lower() for c in caps}) == len(caps), [c["file"] for c in caps]
    assert len(caps) == len(set(res.scenario.model.trace.pcap)) * len(res.seeds), caps
    for c in caps:
        h = pcap_header(out / c["file"])
        assert h["whole"] and h["interface"] == c["port"] and h["comment"]["cnsim.seed"] == str(c["seed"]), (
            c,
            h,
        )
    t = res.summary_dict().get("trace") or {}
    if t.get("events"):
        ev = back.events()
        assert len(ev) == sum(t["rows"].values())
        assert ev.equals(res.events())


@_guarded
def property_trace(raw: dict[str, Any]) -> None:
    import tempfile
    from pathlib import Path

    STATS["traces"] += 1
    try:
        sc = cnsim.Scenario(raw)
        sc.engine_json()
    except cnsim.ScenarioError as e:
        _one_line(e)
        return
    with tempfile.TemporaryDirectory(prefix="cnsim-fuzz-") as tmp:
        try:
            res = _quiet_run(sc, trace_dir=Path(tmp) / "trace")
        except cnsim.ScenarioError as e:
            _one_line(e)
            return
        STATS["traces_run"] += 1
        saved_back(res, Path(tmp) / "out")


#: Seed-list lengths drawn; a campaign (`main`) also draws the long ones
#: (100 as often as the others; 1,000 and 3,400, half a minute each, one
#: draw in 200).
SEED_LENGTHS = [0, 1, 2, 3, 5, 10, 33]
LONG_SEED_LENGTHS = [1_000, 3_400]
LONG_SEEDS = [False]


@st.composite
def seed_lists(draw: Any) -> Any:
    """A seed count or a list of every length: 19-digit seeds (a long list of
    them overflows a pcapng option: item 5), negatives, duplicates, bools."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from([-1, 0, 1, 2, 7, True, 2.5, "3"]))
    # The long lists (a campaign's) are one draw in 200: each takes half a minute.
    long = LONG_SEED_LENGTHS if LONG_SEEDS[0] and draw(st.integers(0, 199)) == 0 else []
    n = draw(st.sampled_from(long or SEED_LENGTHS))
    start = draw(st.sampled_from([0, 1, 10**18, 2**63 - 2 * n - 1, 2**64 - n, -5]))
    step = draw(st.sampled_from([1, 2]))
    seeds: list[Any] = [start + i * step for i in range(n)]
    if seeds and draw(st.integers(0, 7)) == 0:
        seeds.append(seeds[0])  # a duplicate
    return seeds


@st.composite
def seed_scenarios(draw: Any) -> tuple[dict[str, Any], Any]:
    """Two sources into one sink for a few microseconds: loads that make no
    frame at all in some seeds (zero-flow seeds), a capture or none."""
    raw = tomllib.loads(TWO_TOML)
    raw["duration_ms"] = draw(st.sampled_from([0.001, 0.005, 0.02]))
    raw["measure"] = {"start_ms": 0.0, "end_ms": raw["duration_ms"]}
    for n in raw["nodes"][:2]:
        n["load"] = draw(st.sampled_from([0.0, 1e-17, 0.0005, 0.01, 0.6]))
    if draw(st.booleans()):
        raw["trace"] = {"pcap": ["B->D"]}
    return raw, draw(seed_lists())


TWO_TOML = """
name = "two"
duration_ms = 5.0
seeds = 1
bin_us = 100.0
scheme = "nocm"
[[nodes]]
name = "S1"
kind = "station"
load = 0.6
dest = "D"
[[nodes]]
name = "S2"
kind = "station"
load = 0.6
dest = "D"
[[nodes]]
name = "D"
kind = "station"
[[nodes]]
name = "B"
kind = "bridge"
cp = true
[[links]]
a = "S1"
b = "B"
[[links]]
a = "S2"
b = "B"
[[links]]
a = "B"
b = "D"
"""


@_guarded
def property_seeds(case: tuple[dict[str, Any], Any]) -> None:
    import tempfile
    from pathlib import Path

    raw, seeds = case
    STATS["seeds"] += 1
    try:
        sc = cnsim.Scenario(raw).replace(seeds=seeds)
        sc.engine_json()
    except cnsim.ScenarioError as e:
        _one_line(e)
        return
    with tempfile.TemporaryDirectory(prefix="cnsim-fuzz-") as tmp:
        try:
            res = _quiet_run(sc, trace_dir=Path(tmp) / "trace")
        except cnsim.ScenarioError as e:
            _one_line(e)
            return
        STATS["seeds_run"] += 1
        saved_back(res, Path(tmp) / "out")


#: Directories tampered with: built once per process (name -> (dir, what it reads back as)).
_TAMPER: dict[str, Any] = {}


def _tamper_bases() -> dict[str, Any]:
    """Three results directories and a run of other seeds for each: a plain
    run with its report, a traced run (events.parquet, two captures a seed),
    a run of transport flows (pairs.parquet)."""
    if _TAMPER:
        return _TAMPER
    import tempfile
    from pathlib import Path

    root = Path(tempfile.mkdtemp(prefix="cnsim-fuzz-tamper-"))
    two = cnsim.Scenario(tomllib.loads(TWO_TOML)).replace(duration_ms=1.0)
    traced = two.replace(
        duration_ms=0.3, **{"trace.events": ["all"], "trace.max_rows": 3000, "trace.pcap": ["B->D", "S1->B"]}
    )
    flows = cnsim.load("flows_incast").replace(duration_ms=0.3)
    for name, sc, report in (("plain", two, True), ("traced", traced, False), ("flows", flows, False)):
        for tag, seeds in (("", [0, 1]), ("-other", [0, 2])):
            res = _quiet_run(sc.replace(seeds=seeds))
            out = root / f"{name}{tag}"
            res.save(out, report=report)
            if not tag:
                _TAMPER[name] = {
                    "dir": out,
                    "other": root / f"{name}-other",
                    "summary": cnsim.open_results(out).summary_dict(),
                    "json": (out / "summary.json").read_text(),
                    "events": res.events() if name == "traced" else None,
                    "pcap": {p.name: p.read_bytes() for p in res.pcap_files()},
                }
    return _TAMPER


@st.composite
def tamperings(draw: Any) -> tuple[str, list[tuple[Any, ...]]]:
    """A base directory and 1 to 3 operations on its files: delete, cut,
    extend, flip a byte near either end, replace with the other run's file,
    move one file over another, swap two, add a stray copy, change or
    delete a value of summary.json."""
    base = draw(st.sampled_from(["plain", "traced", "flows"]))
    ops = []
    for _ in range(draw(st.integers(1, 3))):
        op = draw(
            st.sampled_from(
                ["delete", "cut", "append", "flip", "other", "move", "swap", "stray", "json", "json"]
            )
        )
        i, j = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
        if op == "cut":
            ops.append((op, i, draw(st.floats(0, 1))))
        elif op == "append":
            ops.append((op, i, draw(st.binary(min_size=1, max_size=16))))
        elif op == "flip":
            ops.append((op, i, draw(st.integers(-64, 63)), draw(st.integers(1, 255))))
        elif op == "json":
            ops.append((op, i, draw(values), draw(st.booleans())))
        else:
            ops.append((op, i, j))
    return base, ops


def _apply(d: Any, other: Any, op: tuple[Any, ...]) -> None:
    import json
    import shutil

    files = sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())
    if not files:
        return
    kind, i = op[0], op[1]
    f = d / files[i % len(files)]
    if kind == "delete":
        f.unlink()
    elif kind == "cut":
        data = f.read_bytes()
        f.write_bytes(data[: int(len(data) * op[2])])
    elif kind == "append":
        with open(f, "ab") as h:
            h.write(op[2])
    elif kind == "flip":
        data = bytearray(f.read_bytes())
        if data:
            k = op[2] % len(data)
            data[k] ^= op[3]
            f.write_bytes(bytes(data))
    elif kind == "other":
        src = other / f.relative_to(d)
        if src.is_file():
            shutil.copy(src, f)
    elif kind in ("move", "swap"):
        g = d / files[op[2] % len(files)]
        if f == g:
            return
        if kind == "move":
            f.replace(g)
        else:
            tmp = f.with_name(f.name + ".swap")
            f.replace(tmp)
            g.replace(f)
            tmp.replace(g)
    elif kind == "stray":
        name = f.name.replace("seed0", "seed9").replace("seed1", "seed8")
        shutil.copy(f, f.with_name(name if name != f.name else "x" + name))
    elif kind == "json":
        s = d / "summary.json"
        if not s.is_file():
            return
        try:
            data = json.loads(s.read_text())
        except ValueError:
            return
        leaves = _leaves(data)
        if leaves:
            path = leaves[i % len(leaves)]
            try:
                _set(data, path, copy.deepcopy(op[2]), delete=op[3])
            except (KeyError, IndexError, TypeError):
                return
            s.write_text(json.dumps(data, default=str))


@_guarded
def property_tamper(case: tuple[str, list[tuple[Any, ...]]]) -> None:
    """A results directory tampered with file by file: `cnsim check` says
    what is wrong (each problem one line naming a file) and never raises;
    `open_results` refuses it (one line) or reads back exactly what the run
    saved; whatever `cnsim check` finds whole reads back exactly."""
    import shutil
    import tempfile
    from pathlib import Path

    from cnsim.reopen import check_run as check_results

    STATS["tampered"] += 1
    name, ops = case
    b = _tamper_bases()[name]
    with tempfile.TemporaryDirectory(prefix="cnsim-fuzz-") as tmp:
        d = Path(tmp) / "d"
        shutil.copytree(b["dir"], d)
        for op in ops:
            _apply(d, b["other"], op)
        c = check_results(d)
        for p in c.problems:
            assert p and "\n" not in p and (str(d) in p), p
        try:
            back = _quiet_open(d)
        except cnsim.ScenarioError as e:
            _one_line(e)
            assert not c.ok, f"open_results refused a directory cnsim check finds whole: {e}"
            STATS["tampered_refused"] += 1
            return
        if c.ok:
            # A summary.json without its file list is an older cnsim's: read with a note, its data the same.
            older = "files" not in (c.summary or {})
            assert not older or any("older cnsim" in n for n in c.notes), c.notes
            got, want = back.summary_dict(), b["summary"]
            if older:
                got, want = ({k: v for k, v in x.items() if k != "files"} for x in (got, want))
            assert got == want, ops
            if b["events"] is not None:
                assert back.events().equals(b["events"]), ops
            assert {p.name: p.read_bytes() for p in back.pcap_files()} == b["pcap"], ops
        else:  # opened: only a trace file read lazily may be wrong, and check named it
            got = {k: v for k, v in back.summary_dict().items() if k != "files"}
            assert got == {k: v for k, v in b["summary"].items() if k != "files"}, (ops, c.problems)
            assert all("events.parquet" in p or "/pcap/" in p for p in c.problems), c.problems
            STATS["tampered_refused"] += 1


def _quiet_open(d: Any) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cnsim.open_results(d)


def make_tests(examples: int) -> list[Any]:
    """The seven properties with `examples` inputs each (hypothesis)."""
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
        s(given(raw=flow_scenarios())(property_flows)),
        s(given(raw=traced_scenarios())(property_trace)),
        s(given(case=seed_scenarios())(property_seeds)),
        s(given(case=tamperings())(property_tamper)),
    ]


#: The properties, in make_tests' order (`--only NAME`).
PROPERTIES = ["scenarios", "sets", "toml", "flows", "traces", "seeds", "tamper"]


def main(argv: list[str]) -> int:
    """A campaign: `--examples N` inputs per property (`--only NAME` for one
    property: scenarios, sets, toml, flows, traces, seeds, tamper); escapes
    are recorded, not raised, counted by kind at the end and written with
    their inputs to `--escapes FILE` (JSON); exit status 1 if any. A
    campaign also draws the long seed lists (1,000 and 3,400 seeds)."""
    import json
    import os
    import time
    from collections import Counter

    os.environ["RUST_BACKTRACE"] = "0"  # a panic is one line in the log, not a backtrace
    examples = int(argv[argv.index("--examples") + 1]) if "--examples" in argv else 1000
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    if only is not None and only not in PROPERTIES:
        print(f"--only: {only!r} is not a property; properties: {', '.join(PROPERTIES)}", file=sys.stderr)
        return 2
    COLLECT[0] = True
    LONG_SEEDS[0] = True
    SEED_LENGTHS.append(100)
    t0 = time.monotonic()
    for name, test in zip(PROPERTIES, make_tests(examples), strict=True):
        if only in (None, name):
            t = time.monotonic()
            test()
            print(
                f"fuzz: {name}: done in {time.monotonic() - t:,.0f} s ({len(ESCAPES):,} escapes so far)",
                flush=True,
            )
    total = sum(STATS[k] for k in ("scenarios", "sets", "toml", "flows", "traces", "seeds", "tampered"))
    print(
        f"fuzz: {total:,} inputs, {len(ESCAPES):,} escaped, {time.monotonic() - t0:,.0f} s: "
        f"{STATS['scenarios']:,} scenarios ({STATS['accepted']:,} accepted), {STATS['sets']:,} --set strings, "
        f"{STATS['toml']:,} damaged TOML files, {STATS['flows']:,} flow scenarios ({STATS['flows_run']:,} run to "
        f"the end, frames conserved), {STATS['traces']:,} traced scenarios ({STATS['traces_run']:,} run, saved, "
        f"checked and reopened), {STATS['seeds']:,} seed lists ({STATS['seeds_run']:,} run, saved and reopened), "
        f"{STATS['tampered']:,} tampered results directories ({STATS['tampered_refused']:,} refused, the others "
        "read back exactly)"
    )
    kinds = Counter((k, re.sub(r"-?\d[\d.e+-]*", "N", m)) for k, m, _ in ESCAPES)
    for (kind, msg), n in kinds.most_common():
        print(f"  {n:6,} x {kind}: {msg}")
    if "--escapes" in argv:
        with open(argv[argv.index("--escapes") + 1], "w") as f:
            json.dump(
                [{"kind": k, "message": m, "input": i} for k, m, i in ESCAPES], f, indent=1, default=repr
            )
    return 1 if ESCAPES else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
