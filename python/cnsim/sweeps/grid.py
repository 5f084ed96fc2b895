"""Sweep grids: `--grid KEY=V1,V2` parsing, the points of the cartesian
product, each validated (engine checks included) before anything runs or
is written, and their directory names."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ScenarioError, names_a_key
from ..scenario import Scenario, parse_value

#: Grid keys besides the dotted parameter names of `--set`.
RUN_CHOICES = ("scheme", "pause")
_MAX_ID = 100  # longest point directory name

# ------------------------------------------------------------------ grid


@dataclass
class Point:
    """One grid point: its values, its scenario (all seeds) and where it lives."""

    index: int
    id: str
    values: dict[str, Any]
    scenario: Scenario
    config: Any = field(repr=False)  # the engine's compiled configuration (Scenario.compiled)


def parse_grid(specs: Iterable[str], label: str = "--grid") -> dict[str, list[Any]]:
    """`KEY=V1,V2,...` items (CLI `--grid`) as {key: [values]}; values are
    TOML literals like `--set` values, split at top-level commas (a value may
    be an array or an inline table)."""
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        key, sep, text = spec.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ScenarioError(f"{label} {spec}: expected KEY=V1,V2,...")
        if key in grid:
            raise ScenarioError(f"{label} {key}: given twice; list all its values in one {label} {key}=V1,V2")
        parts = _split_top(text)
        if any(not p.strip() for p in parts):
            raise ScenarioError(f"{label} {key}: empty value in '{text}'; expected {key}=V1,V2,...")
        grid[key] = [parse_value(p.strip()) for p in parts]
    return grid


def _split_top(text: str) -> list[str]:
    """Splits at commas outside quotes, brackets and braces."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    quote: str | None = None
    escaped = False
    for ch in text:
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _normalize_grid(grid: Mapping[str, Any] | None, label: str) -> dict[str, list[Any]]:
    if grid is not None and not isinstance(grid, Mapping):
        raise ScenarioError(
            f"{label}: {type(grid).__name__} is not allowed; expected a table {{parameter: [values]}}, "
            'e.g. {"bcn.w": [2, 4]}'
        )
    out: dict[str, list[Any]] = {}
    for key, vals in (grid or {}).items():
        if not isinstance(key, str) or not key.strip():
            raise ScenarioError(f"{label}: {key!r} is not a parameter name")
        if isinstance(vals, str | bytes | Mapping) or not isinstance(vals, Iterable):
            vals = [vals]
        vals = list(vals)
        if not vals:
            raise ScenarioError(f"{label} {key}: no values; expected at least one")
        seen: list[str] = []
        numbers: list[tuple[Any, str]] = []
        for v in vals:
            lit = _literal(v)
            if lit in seen:
                raise ScenarioError(f"{label} {key}: value {lit} given twice")
            seen.append(lit)
            if isinstance(v, int | float) and not isinstance(v, bool):
                same = [w for n, w in numbers if n == v]
                if same:  # 1 and 1.0: one value, two identical points
                    raise ScenarioError(f"{label} {key}: value {lit} given twice (as {same[0]} and {lit})")
                numbers.append((v, lit))
        out[key] = vals
    return out


def _literal(v: Any) -> str:
    """A value as the user would write it (TOML-ish), for names and messages."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":"), sort_keys=True)


def _apply(base: Scenario, values: dict[str, Any], label: str, schemes: list[Any]) -> Scenario:
    """`base` with the point's values, every error naming the grid key."""
    for key in values:
        if key == "seeds":
            raise ScenarioError(f"{label} seeds: the seeds are not a grid parameter; use --seeds N")
    if "pause" in values and not isinstance(values["pause"], bool):
        raise ScenarioError(
            f"{label} pause: {_literal(values['pause'])} is not allowed; expected true or false"
        )
    try:
        sc = base._replace(values, schemes=[s for s in schemes if isinstance(s, str)])
        sc.engine_config_checked()  # resolving can still find a bad value
        return sc
    except ScenarioError as e:
        blamed = _base_fault(base, e, values)
        if blamed is not None:
            raise blamed from None
        if e.option == "--set":  # named by its key already: `--set KEY: ...` becomes `--grid KEY: ...`
            raise ScenarioError(e.what, param=e.param, option=label) from None
        what = str(e) if names_a_key(e.param, values) else f"{', '.join(values)}: {e}"
        raise ScenarioError(what, param=e.param, option=label) from None


def _base_fault(base: Scenario, e: ScenarioError, values: dict[str, Any]) -> ScenarioError | None:
    """The base scenario's own error when a point's error is not the grid's
    doing: the parameters the failed rule names (its `param`, `pause.xon_bytes
    / pause.xoff_bytes`) include no grid key, and the base (the file with
    its `--set` overrides) breaks a rule by itself. That error names its
    `--set` key, or the file's parameter, instead of blaming the grid."""
    named = e.param.split(" / ") if e.param else []
    if any(n == k or n.startswith(f"{k}.") or k.startswith(f"{n}.") for n in named for k in values):
        return None
    try:
        base.engine_config_checked()
    except ScenarioError as own:
        return own
    return None


def build_points(base: Scenario, grid: Mapping[str, Any] | None, label: str = "--grid") -> list[Point]:
    """Every grid point (the first key varies slowest), validated: a bad key
    or value raises ScenarioError naming it before anything runs."""
    from ..guards import check_grid_size, check_run_memory

    g = _normalize_grid(grid, label)
    check_grid_size(math.prod(len(v) for v in g.values()))
    # Each point is checked whole, not one key at a time, so that values that
    # only make sense together (a topology variant and the degrees it allows)
    # can be swept; the message still names the parameter at fault.
    combos = list(itertools.product(*g.values())) if g else [()]
    width = max(3, len(str(len(combos) - 1)))
    points = []
    for i, combo in enumerate(combos):
        values = dict(zip(g, combo, strict=True))
        sc = _apply(base, values, label, g.get("scheme", []))
        check_run_memory(sc, f"point {_point_id(i, width, values)}")
        points.append(Point(i, _point_id(i, width, values), values, sc, sc.compiled()))
    return points


def _point_id(index: int, width: int, values: dict[str, Any]) -> str:
    name = f"p{index:0{width}d}"
    if values:
        name += "-" + ",".join(f"{k}={_literal(v)}" for k, v in values.items())
    name = re.sub(r"[^A-Za-z0-9._=,+-]", "_", name)
    return name[:_MAX_ID]
