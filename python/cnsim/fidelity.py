"""One scenario at both fidelities (`cnsim compare-fidelity`, docs/flow-level.md):
the packet model and the flow-level model run the same flows (same sizes,
sources, destinations and start times for the same seeds), so their FCTs are
compared per size bucket (the p50 / p95 / p99 slowdown of each, and the
flow-level figure's error relative to the packet model's) and flow by flow.

A percentile of a few flows is mostly chance: a bucket with fewer than
`MIN_FLOWS` finished flows (at either fidelity) is shown but not judged."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .metrics import SIZE_BUCKETS
from .scenario import Scenario

#: The flow-level model's target: each percentile within 10% of the packet model's.
TOLERANCE = 0.10
#: Below this many finished flows in a bucket its percentiles are not judged.
MIN_FLOWS = 200
QUANTILES = ("p50", "p95", "p99")


@dataclass
class FidelityComparison:
    """Both runs of one scenario and what separates them."""

    scenario: Scenario
    packet: Any
    flow: Any
    #: Wall seconds of each whole run (engine, metrics; not saving).
    packet_wall_s: float
    flow_wall_s: float

    def buckets(self) -> Any:
        """One row per size bucket: `flows`, `finished_packet`,
        `finished_flow`, then for each of p50 / p95 / p99 the packet
        model's slowdown, the flow-level model's and `error_pXX`
        (flow / packet - 1), `judged` (enough flows at both), and
        `flow_median_error`: the median over the bucket's flows finished at
        both fidelities of |slowdown_flow / slowdown_packet - 1|."""
        import polars as pl

        from .metrics import slowdown_by_size

        p, f = self.packet.flows, self.flow.flows
        bp, bf = slowdown_by_size(p), slowdown_by_size(f)
        keys = ["seed", "src", "dst", "start_ps", "size_bytes"]
        joined = p.select([*keys, "slowdown"]).join(
            f.select([*keys, pl.col("slowdown").alias("slowdown_flow")]), on=keys, how="inner"
        )
        joined = joined.filter(pl.col("slowdown").is_not_null() & pl.col("slowdown_flow").is_not_null())
        rows = []
        lower = 0
        for i, upper in enumerate(SIZE_BUCKETS):
            inside = joined.filter(
                (pl.col("size_bytes") > lower)
                & (pl.lit(upper is None) | (pl.col("size_bytes") <= (upper if upper is not None else 0)))
            )
            per_flow = (inside["slowdown_flow"] / inside["slowdown"] - 1.0).abs()
            row: dict[str, Any] = {
                "lower_bytes": lower,
                "upper_bytes": upper,
                "flows": bp["flows"][i],
                "finished_packet": bp["finished"][i],
                "finished_flow": bf["finished"][i],
            }
            judged = min(bp["finished"][i], bf["finished"][i]) >= MIN_FLOWS
            for q in QUANTILES:
                a, b = bp[f"slowdown_{q}"][i], bf[f"slowdown_{q}"][i]
                row[f"packet_{q}"] = a
                row[f"flow_{q}"] = b
                row[f"error_{q}"] = None if a is None or b is None else b / a - 1.0
            row["judged"] = judged
            row["flow_median_error"] = float(per_flow.median()) if len(per_flow) else None
            rows.append(row)
            lower = upper if upper is not None else lower
        return pl.DataFrame(rows)

    def as_dict(self) -> dict[str, Any]:
        b = self.buckets()
        judged = b.filter(b["judged"])
        within = int((judged["error_p99"].abs() <= TOLERANCE).sum()) if len(judged) else 0
        return {
            "scenario": self.scenario.name,
            "scheme": self.scenario.scheme,
            "pause": self.scenario.pause,
            "seeds": list(self.scenario.seeds),
            "tolerance": TOLERANCE,
            "min_flows": MIN_FLOWS,
            "buckets": b.to_dicts(),
            "p99_cells_judged": len(judged),
            "p99_cells_within": within,
            "packet_wall_s": self.packet_wall_s,
            "flow_wall_s": self.flow_wall_s,
            "speedup": self.packet_wall_s / self.flow_wall_s if self.flow_wall_s > 0 else None,
            "flow_warnings": list(self.flow_warnings),
        }

    flow_warnings: tuple[str, ...] = ()


def compare(
    scenario: Scenario, *, jobs: int | None = None, progress: bool | None = None
) -> FidelityComparison:
    """Runs `scenario` at both fidelities (every seed of it) and compares them."""
    import warnings

    from .errors import ScenarioWarning
    from .runner import run

    packet_sc = scenario.replace(fidelity="packet")
    flow_sc = scenario.replace(fidelity="flow")
    t0 = time.perf_counter()
    packet = run(packet_sc, jobs=jobs, progress=progress)
    packet.flows  # noqa: B018 - the metrics, inside the timing
    t1 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ScenarioWarning)
        flow = run(flow_sc, jobs=jobs, progress=progress)
    flow.flows  # noqa: B018
    t2 = time.perf_counter()
    out = FidelityComparison(scenario, packet, flow, t1 - t0, t2 - t1)
    out.flow_warnings = tuple(dict.fromkeys(str(w.message) for w in caught))
    return out
