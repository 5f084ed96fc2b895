"""The analysis sections of a scenario (`[fairness]`, ...), declared once
here in the format of the engine's declarations (`declarations.json`: name,
unit, type, default, range, required / unset, help), because only Python
reads them: they choose what the metrics of metrics.md are computed over
after the run, and never reach the engine. They are read by record classes
made from these tables (`cnsim.parameters.record`), as the engine-declared
sections' are; the rules that tie them to the rest of the scenario (a window that
exists, a link direction of the topology) are `core.Scenario._check`'s."""

from __future__ import annotations

from typing import Any

from ..declarations import limits
from ..parameters import param, table

#: The fastest link (the engine's limit, `params::MAX_GBPS`).
_MAX_GBPS = limits()["max_gbps"]

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
