"""Scenario files: the built-in scenarios shipped in the package, files by
path, and `--set KEY=VALUE` overrides applied to a loaded scenario."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from ..schemes import SCHEMES
from . import toml_text
from .core import Scenario, check_scheme_keys, workload_schemes
from .overrides import _fit_windows, name_sets, parse_value, set_dotted


def builtin_names() -> list[str]:
    """Names of the built-in scenarios (python/cnsim/scenarios/*.toml)."""
    root = resources.files("cnsim") / "scenarios"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def _read_toml(text: str, source: str) -> dict[str, Any]:
    # tomli's compiled reader: a large topology (10,000 nodes) in half tomllib's time.
    try:
        return toml_text.loads(text)
    except toml_text.TOMLDecodeError as e:
        raise ScenarioError(f"{source}: malformed TOML: {e}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: malformed TOML: nested too deeply") from None


def load(name_or_path: str | Path, **changes: Any) -> Scenario:
    """A built-in scenario by name, or a scenario file by path; `changes` as
    in `Scenario.replace`."""
    text, source = _scenario_text(str(name_or_path))
    # The run choices are arguments of the Scenario itself: the file is read
    # and checked once with them (a 208-node file costs ~10 ms a reading).
    choices = {k: changes.pop(k) for k in ("scheme", "pause", "seeds") if k in changes}
    sc = Scenario(_read_toml(text, source), source=source, _owned=True, **choices)
    return sc.replace(**changes) if changes else sc


def _scenario_text(name: str) -> tuple[str, str]:
    p = Path(name)
    try:
        exists, is_file = p.exists(), p.is_file()
    except OSError as e:  # a name too long, a path through a file
        raise ScenarioError(f"scenario file '{name}' cannot be read ({e.strerror or e})") from None
    if p.suffix == ".toml" or exists or "/" in name:
        if not is_file:
            raise ScenarioError(f"scenario file '{name}' does not exist")
        try:
            return p.read_text(), str(p)
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError(f"scenario file '{name}' cannot be read: {e}") from None
    if name in builtin_names():
        return (resources.files("cnsim") / "scenarios" / f"{name}.toml").read_text(), name
    raise ScenarioError(
        f"unknown scenario '{name}'; built-in scenarios: {', '.join(builtin_names())} "
        "(or give a path to a .toml file)"
    )


def apply_sets(
    sc: Scenario, sets: Iterable[str], schemes: Iterable[str] = (), first: dict[str, Any] | None = None
) -> Scenario:
    """Applies `KEY=VALUE` overrides (CLI `--set`), values as TOML literals. A
    parameter of a scheme that does not run is refused, unless it belongs to
    one of `schemes` (a sweep's grid of schemes). `first`: dotted changes
    applied before the sets in the same step (`--duration`), so that the
    windows are fitted once, to the values that run."""
    changes: dict[str, Any] = {}
    sets = list(sets)
    if first and not sets:
        return sc.replace(**first)
    for s in sets:
        key, sep, val = s.partition("=")
        if not sep or not key.strip():
            raise ScenarioError(f"{s}: expected KEY=VALUE", option="--set")
        changes[key.strip()] = parse_value(val.strip())
    if not changes:
        return sc
    raw = copy.deepcopy(sc.raw)
    try:
        for key, value in (first or {}).items():
            set_dotted(raw, key, value)
        for key, value in changes.items():
            set_dotted(raw, key, value)
        running = raw.get("scheme")
        if isinstance(running, str) and running in SCHEMES:  # else the model names what is wrong
            check_scheme_keys(changes, running, [*schemes, *workload_schemes(raw)], "--set ")
        if "duration_ms" in changes or "duration_ms" in (first or {}):
            _fit_windows(raw)
        out = Scenario(raw, source=sc.source)
    except ScenarioError as e:
        # Name what was set; and the parameter at fault when it is another one.
        raise name_sets(e, changes) from None
    # The engine's rules are checked later (Scenario.engine_config_checked):
    # their errors name the --set keys the same way.
    out._sets = (*sc._sets, *changes)
    return out
