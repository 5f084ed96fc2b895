"""Congestion-management schemes as users name them, and their parameter
tables (`[bcn]`, `[qcn2pt]`, ...).

Each scheme declares its parameters once, in its engine module
(`crates/cnsim-core/src/scheme/`, e.g. `qcn::table`): name (the unit is in
the name), type, default, range, cross-parameter rules and help. This module
reads that declaration as record classes (`cnsim.parameters`), so scenario validation,
`cnsim show`'s comments and the tables of docs/scenario-format.md
(`cnsim.docs`) cannot drift from what the engine checks and uses. Rules
that tie parameters together are checked by the engine when a scenario is
resolved (`Scenario.engine_json`), before anything runs or is written.
"""

from __future__ import annotations

from typing import Any

from .declarations import declarations
from .parameters import Record, record

#: Parameter tables by name, as they appear in scenario files (`[bcn]`, ...).
TABLES: dict[str, type[Record]] = {t["name"]: record(t) for t in declarations()["tables"]}

#: Rules tying a table's parameters together (checked by the engine), the
#: schemes' and the scenario sections', as users read them.
RULES: dict[str, list[str]] = {
    t["name"]: [r["text"] for r in t["rules"]]
    for t in [*declarations()["tables"], *declarations()["sections"]]
}

#: Scheme name -> (parameter table or None, one-line description).
SCHEMES: dict[str, tuple[str | None, str]] = {
    s["name"]: (s["table"], s["description"]) for s in declarations()["schemes"]
}

_ENTRIES: dict[str, dict[str, Any]] = {s["name"]: s for s in declarations()["schemes"]}

#: Per table, the parameters its scheme's name sets (absent from the user's table).
_FIXED: dict[str, dict[str, Any]] = {
    t["name"]: {p["name"]: p["default"] for p in t["params"] if p["fixed"]} for t in declarations()["tables"]
}


def engine_scheme(name: str, table: Record | None) -> dict[str, Any]:
    """The engine's scheme config for scheme `name` with its parameter table:
    the engine scheme, the table's name (for error messages), every
    parameter, and what the scheme's name sets (`bcnmax`: `bcn_max = true`)."""
    e = _ENTRIES[name]
    d: dict[str, Any] = {"name": e["engine"]}
    if e["table"] is not None:
        assert table is not None
        d["table"] = e["table"]
        d.update(table.dump())
        d.update(_FIXED[e["table"]])
        d.update(e["sets"])
    return d


def qeq_bytes(table: Record | None) -> float | None:
    """The scheme's equilibrium queue in bytes (drawn on queue plots)."""
    if table is None:
        return None
    if "qeq_bytes" in table.names:
        return float(table.qeq_bytes)  # type: ignore[attr-defined]
    if "qeq_pages" in table.names:
        return float(table.qeq_pages) * 64  # type: ignore[attr-defined]
    return None
