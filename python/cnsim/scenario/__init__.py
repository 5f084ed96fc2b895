"""Scenario files: loading (TOML), validation with one-line errors,
`--set` overrides by dotted name, and resolution into the engine config
(docs/engine-interface.md). The full format is documented in
docs/scenario-format.md.

    sc = load("baseline")                                # or a path to a .toml file
    sc = sc.replace(scheme="nocm", pause=True, seeds=3, **{"pause.xoff_bytes": 120_000})
    cfg = resolve(sc)                                    # the engine config (a dict)

The package, one concern per module: `model` (the parameters, declared once,
and the reading of a file against them), `core` (the Scenario and the
rules between parameters), `overrides` (changes by dotted name), `engine_config`
(`resolve`: the engine config), `analysis_sections` (the sections only the
metrics read), `show` (commented TOML), `files` (built-in scenarios and
files).
"""

from ..errors import ScenarioError
from .core import Scenario
from .engine_config import resolve
from .files import apply_sets, builtin_names, load
from .model import PS_PER_MS, PS_PER_US, ScenarioModel
from .overrides import parse_value, set_dotted

__all__ = [
    "PS_PER_MS",
    "PS_PER_US",
    "Scenario",
    "ScenarioError",
    "ScenarioModel",
    "apply_sets",
    "builtin_names",
    "load",
    "parse_value",
    "resolve",
    "set_dotted",
]
