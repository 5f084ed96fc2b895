"""The engine's parameter declarations of every scheme (`scheme::params` in
crates/cnsim-core), as data: `declarations.json` beside this module, written
by `python -m cnsim.docs` from `_core.scheme_declarations()` (a test checks
it is current). Reading the file instead of asking the engine keeps
`cnsim --help`, `list` and `show` from loading the engine at all."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("declarations.json")


@cache
def declarations() -> dict[str, Any]:
    """`tables` (each with `params` and `rules`) and `schemes` (name, engine
    scheme, table, what the name sets, description)."""
    return json.loads(PATH.read_text())


def limits() -> dict[str, float]:
    """The engine's limits on the user's values (`params::limits`: max_ms,
    max_us, max_bytes, min_gbps, max_gbps, max_u32), declared once there."""
    return declarations()["limits"]  # type: ignore[no-any-return]


def unit_of(name: str) -> str:
    """A parameter's unit symbol from its name's suffix (`xoff_bytes`:
    bytes), by the engine's rule (`params::Unit::suffixes`); "" for a plain
    number."""
    return next((u["symbol"] for u in declarations()["units"] if name.endswith(u["suffix"])), "")


def quantity_of(name: str) -> str:
    """`time`, `rate`, `size` or "" for a parameter named `name` (the engine's rule)."""
    return next((u["quantity"] for u in declarations()["units"] if name.endswith(u["suffix"])), "")


def scheme_names() -> list[str]:
    return [s["name"] for s in declarations()["schemes"]]


def engine_text() -> str:
    """The declarations as the engine gives them now, as the file holds them."""
    import cnsim._core as _core

    return json.dumps(json.loads(_core.scheme_declarations()), indent=1) + "\n"


def outputs() -> dict[str, Any]:
    """The results' files and series, declared in the engine
    (crates/cnsim-core/src/outputs.rs): `files` (name, file, row, columns:
    name, type, unit, help) and `series` (name, key, unit, help)."""
    return declarations()["outputs"]  # type: ignore[no-any-return]


@cache
def _output_files() -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in outputs()["files"]}


def output_file(name: str) -> str:
    """The file name of declared file `name` (`flows_transport`: flows.parquet)."""
    return _output_files()[name]["file"]  # type: ignore[no-any-return]


def output_columns(name: str) -> list[tuple[str, str]]:
    """(column, type) of declared file `name` (`flows`, `queues`, ...), in
    order; `<window>` / `<counter>` stand for one column each."""
    return [(c["name"], c["type"]) for c in _output_files()[name]["columns"]]


def output_type(name: str, column: str) -> str | None:
    """The declared type of `column` in file `name` (`bytes_measure`
    matches `bytes_<window>`), or None when it declares no such column."""
    for pattern, dtype in output_columns(name):
        head, sep, tail = pattern.partition("<")
        if column == pattern or (
            sep
            and column.startswith(head)
            and len(column) > len(head)
            and column.endswith(tail.partition(">")[2])
        ):
            return dtype
    return None


def series_unit(name: str) -> str:
    """The unit of binned series `name` ("" when it is not declared)."""
    return next((s["unit"] for s in outputs()["series"] if s["name"] == name), "")
