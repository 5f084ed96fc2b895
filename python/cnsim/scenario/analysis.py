"""The analysis sections of a scenario (`[fairness]`, ...), declared once
here in the format of the engine's declarations (`declarations.json`: name,
unit, type, default, range, required / unset, help), because only Python
reads them: they choose what the metrics of metrics.md are computed over
after the run, and never reach the engine. Their models are built from
these tables (`cnsim.declared.model`), as the engine-declared sections'
are; the rules that tie them to the rest of the scenario (a window that
exists, a link direction of the topology) are `core.Scenario._check`'s."""

from __future__ import annotations

from typing import Any

#: Limits of the engine's units (model.py's MAX_MS / MAX_GBPS).
_MAX_MS = 1e9
_MAX_GBPS = 1e6
_QUANTITY = {"ms": "time", "us": "time", "Gbit/s": "rate", "bytes": "size"}
_UNIT = {"_ms": "ms", "_us": "us", "_gbps": "Gbit/s", "_bytes": "bytes"}


def _bound(value: float | None, inclusive: bool) -> dict[str, Any] | None:
    return None if value is None else {"value": value, "inclusive": inclusive}


def _range_text(lo: dict[str, Any] | None, hi: dict[str, Any] | None) -> str:
    parts = []
    for b, (closed, open_) in ((lo, (">=", ">")), (hi, ("<=", "<"))):
        if b is not None:
            v = b["value"]
            parts.append(f"{closed if b['inclusive'] else open_} {int(v) if float(v).is_integer() else v}")
    return " and ".join(parts)


def param(
    name: str,
    typ: str,
    help: str,
    default: Any = None,
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    required: bool = False,
    unset: str | None = None,
) -> dict[str, Any]:
    """One declared parameter, as the engine's `Table::to_json` writes it
    (`typ`: float, int, bool or str, the last Python's own)."""
    unit = next((u for suffix, u in _UNIT.items() if name.endswith(suffix)), "")
    if unit in ("ms", "us") and le is None and lt is None:  # a time fits the engine's clock
        le = _MAX_MS if unit == "ms" else _MAX_MS * 1e3
    lo = _bound(gt, False) if gt is not None else _bound(ge, True)
    hi = _bound(lt, False) if lt is not None else _bound(le, True)
    return {
        "name": name,
        "unit": unit,
        "quantity": _QUANTITY.get(unit, ""),
        "type": typ,
        "default": None if required or unset else default,
        "min": lo,
        "max": hi,
        "range": _range_text(lo, hi),
        "choices": None,
        "help": help,
        "fixed": False,
        "required": required,
        "unset": unset,
    }


def table(name: str, doc: str, *params: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "doc": doc, "params": list(params), "rules": [], "per_node": []}


FAIRNESS = table(
    "fairness",
    "The fairness metrics of metrics.md over the flows of loaded stations (over the loaded stations "
    "themselves when the run keeps no per-flow counters): `dev_max`, `dev_min`, `dev_mean`, `dev_rms`, `jain`.",
    param("window", "str", "the named window fairness is measured over", "fairness"),
    param("target_gbps", "float", "fair-share target rate T (Gbit/s)", gt=0, le=_MAX_GBPS, required=True),
)

#: Every section declared here, by name.
SECTIONS: dict[str, dict[str, Any]] = {t["name"]: t for t in (FAIRNESS,)}
