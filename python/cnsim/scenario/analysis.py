"""The analysis sections of a scenario (`[fairness]`, ...), declared once
here in the format of the engine's declarations (`declarations.json`: name,
unit, type, default, range, required / unset, help), because only Python
reads them: they choose what the metrics of metrics.md are computed over
after the run, and never reach the engine. They are read by record classes
made from these tables (`cnsim.records.record`), as the engine-declared
sections' are; the rules that tie them to the rest of the scenario (a window that
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

UTILIZATION = table(
    "utilization",
    "`link_utilization` = throughput of one link direction over a named window / the link's rate.",
    param("link", "str", "link direction FROM->TO whose utilisation is reported", required=True),
    param("window", "str", "the named window it is measured over", "utilization"),
)

STABILITY = table(
    "stability",
    "Time to stability (metrics.md). Reported per seed: `congestion_onset_ms` (the queue first reaches the "
    "threshold), `time_to_stability_ms` (it first falls back below it; null when it never does) and "
    "`time_to_stability_since_onset_ms`, at the resolution of `bin_us`.",
    param("port", "str", "the CP port FROM->TO whose queue is watched", required=True),
    param("factor", "float", "threshold = factor x the scheme's Qeq (BCN's default Qeq for nocm)", 2.0, gt=0),
)

INNOCENT = table(
    "innocent",
    "Innocent-flow throughput: flows to `sink` against their offered load. Reported: `innocent_throughput` "
    "(Gbit/s over the measure window), `innocent_offered` (Gbit/s) and `innocent_share`.",
    param("sink", "str", "the station the innocent flows go to", required=True),
)

TRANSIENT = table(
    "transient",
    "Transient duration by initial data deletion (metrics.md, Jain 1991). Reported across seeds "
    "(`aggregates` in summary.json): `transient_ms` (the knee of the seeds' mean curve), `transient_rtts`, "
    "beside it the knee of each seed's own curve (`transient_rep_median_ms`, `transient_rep_q1_ms`, "
    "`transient_rep_q3_ms`, `transient_rep_min_ms`, `transient_rep_max_ms`), `settling_ms`, `settling_rtts`, "
    "`transient_rtt_ms`; the rc(l) curve is saved as `transient.parquet` and plotted with the knee and the "
    "settling time marked (`transient.png`).",
    param(
        "onset_ms",
        "float",
        "congestion onset: the aggregate-throughput series starts here",
        ge=0,
        required=True,
    ),
    param("end_ms", "float", "end of the analysed series (none: the run end)", gt=0, unset="the run end"),
    param("bin_ms", "float", "bin width of the analysed series", 1.0, gt=0),
    param(
        "epsilon",
        "float",
        "knee rule: the transient ends at the smallest l with |rc(l') - rc(l)| <= epsilon for all l' up to n/2",
        0.01,
        gt=0,
    ),
    param("rtt_ms", "float", "the RTT the transient is also expressed in", gt=0, required=True),
    param(
        "settle_band",
        "float",
        "settling time: the band around the steady mean (the mean of the series' second half), as a "
        "fraction of it",
        0.05,
        gt=0,
        lt=1,
    ),
    param(
        "settle_smooth_ms",
        "float",
        "settling time: width of the centred moving average applied first",
        10.0,
        gt=0,
    ),
)

#: Every section declared here, by name.
SECTIONS: dict[str, dict[str, Any]] = {
    t["name"]: t for t in (FAIRNESS, UTILIZATION, STABILITY, INNOCENT, TRANSIENT)
}
