"""Every metric of metrics.md, computed in one place from what a run
recorded (the engine's raw counter tables, `cnsim.engine.SeedRun`): scalar
metrics per seed (throughput, fairness, drops, PAUSE, overhead, delays),
their statistics over seeds (mean, standard deviation, 95% confidence
interval), the derived per-flow and per-link tables, time to stability and
the transient duration. Nothing here runs inside the engine's hot path.

The per-seed metrics and derived tables are plain Python over the engine's
columns (`cnsim.tables.Table`): no dataframe library and no numpy is
imported for a run; the time-series metrics (stability, transient) import
numpy when a scenario has them. Sums are sequential (`seq_sum`), as the
engine's were, so every figure is reproducible to the last bit; percentiles
interpolate linearly between ranks exactly as numpy's default does."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .tables import Table, percentile, seq_mean, seq_sum

PS_PER_S = 1e12
#: Picoseconds to microseconds as a multiplication by the reciprocal: the
#: form these columns were always computed in (a dataframe's division by a
#: scalar), kept so that every saved figure stays the same to the last bit.
_US_PER_PS = 1 / 1e6


def gbps(bytes_: Sequence[float], ps: float) -> list[float]:
    """Gbit/s of byte counts over `ps` picoseconds (0 when `ps` is 0),
    elementwise as bytes x 8 x 1000 / ps."""
    if ps == 0:
        return [0.0] * len(bytes_)
    d = float(ps)
    return [float(b) * 8.0 * 1000.0 / d for b in bytes_]


def fdiv(a: float, b: float) -> float:
    """a / b with IEEE semantics (x / 0 is +-inf, 0 / 0 NaN), as a dataframe divides."""
    try:
        return a / b
    except ZeroDivisionError:
        return math.nan if a == 0 or a != a else math.copysign(math.inf, a) * math.copysign(1.0, b)


def _windows(run: Any) -> list[tuple[str, int, int]]:
    w = run.table("windows")
    return list(zip(w["name"], w["start_ps"], w["end_ps"], strict=True))


def flow_table(run: Any) -> Table:
    """Flows (src, dst) with frames generated / delivered and
    `throughput_gbps_<window>`: bytes delivered in each window / its length."""
    f = run.table("flows")
    return f.with_columns(
        **{f"throughput_gbps_{n}": gbps(f[f"bytes_{n}"], b - a) for n, a, b in _windows(run)}
    )


#: Size buckets (bytes, upper bounds; None: no bound) of the slowdown
#: percentiles: the boundaries of the web-search CDF's steps that FCT studies plot.
SIZE_BUCKETS: tuple[int | None, ...] = (10_000, 30_000, 100_000, 1_000_000, 10_000_000, None)
#: How a percentile is taken from a sample (numpy's method name): linear
#: interpolation between the order statistics (Hyndman and Fan's type 7;
#: numpy's, R's and Excel's default).
PERCENTILE_METHOD = "linear"
#: Unfinished flows' finish time in the engine's records.
_NEVER = 2**64 - 1


def has_flow_records(run: Any) -> bool:
    """The run carried transport flows (a `[workload]`)."""
    t = run.columns.get("flow_records")
    return t is not None and len(t) > 0


def fct_table(run: Any) -> Table:
    """One row per transport flow: the engine's record (`src`, `dst`,
    `size_bytes`, `start_ps`, `finish_ps`, `acked_ps`, `ideal_fct_ps`,
    `retransmitted`, `timeouts`, `hops`) and `start_us`, `finish_us`,
    `fct_us`, `fct_acked_us` (to the sender's last acknowledgement),
    `ideal_fct_us` and `slowdown` (FCT over the ideal FCT: the same flow alone
    on the empty network along its path); null for a flow that did not
    finish inside the run."""
    t = run.table("flow_records")
    return _fct_table_numpy(t) if len(t) > NUMPY_FLOWS else _fct_table(t)


#: Past this many flows the FCT table is computed in numpy: a run of
#: millions of flows reads it several times (metrics, flows.parquet, the
#: report), seconds each per value in Python. Below, in Python, so that a
#: small run never imports numpy (its start-up is most of such a run).
NUMPY_FLOWS = 20_000


def _fct_table(t: Table) -> Table:
    start, finish, ideal = t["start_ps"], t["finish_ps"], t["ideal_fct_ps"]
    k = _US_PER_PS
    finish_us = [None if f == _NEVER else float(f) * k for f in finish]
    fct_us = [None if f == _NEVER else float(f - s) * k for s, f in zip(start, finish, strict=True)]
    acked = t["acked_ps"] if "acked_ps" in t.columns else [_NEVER] * len(start)
    fct_acked_us = [None if a == _NEVER else float(a - s) * k for s, a in zip(start, acked, strict=True)]
    ideal_us = [float(i) * k for i in ideal]
    return t.with_columns(
        start_us=[float(s) * k for s in start],
        finish_us=finish_us,
        fct_us=fct_us,
        fct_acked_us=fct_acked_us,
        ideal_fct_us=ideal_us,
        slowdown=[None if f is None else fdiv(f, i) for f, i in zip(fct_us, ideal_us, strict=True)],
    )


def _fct_table_numpy(t: Table) -> Table:
    # The same IEEE arithmetic as _fct_table's per value (an exact integer
    # difference, rounded to a double once, times 1e-6; null where a time is
    # 2^64 - 1), so both give the same bits (tests/test_collectives.py).
    import numpy as np

    def ps(name: str) -> Any:
        return np.asarray(t[name], dtype=np.uint64)

    start, finish, ideal = ps("start_ps"), ps("finish_ps"), ps("ideal_fct_ps")
    acked = ps("acked_ps") if "acked_ps" in t.columns else np.full(len(start), _NEVER, dtype=np.uint64)
    k = _US_PER_PS
    unfinished = finish == _NEVER
    # Differences of unfinished flows wrap around; they are nulled below.
    fct = (finish - start).astype(np.float64) * k
    ideal_us = ideal.astype(np.float64) * k
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = fct / ideal_us

    def nullable(values: Any, null: Any) -> list[float | None]:
        out: list[float | None] = values.tolist()
        for i in np.flatnonzero(null).tolist():
            out[i] = None
        return out

    return t.with_columns(
        start_us=(start.astype(np.float64) * k).tolist(),
        finish_us=nullable(finish.astype(np.float64) * k, unfinished),
        fct_us=nullable(fct, unfinished),
        fct_acked_us=nullable((acked - start).astype(np.float64) * k, acked == _NEVER),
        ideal_fct_us=ideal_us.tolist(),
        slowdown=nullable(slow, unfinished),
    )


def flow_metrics(run: Any) -> dict[str, Any]:
    """FCT metrics of a run with transport flows: flows started and
    completed, slowdown percentiles (all flows, and flows under 100 KB),
    mean FCT; over the flows that finished."""
    t = fct_table(run)
    size, fct, sd = t["size_bytes"], t["fct_us"], t["slowdown"]
    done = [i for i, f in enumerate(fct) if f is not None]
    slow = [sd[i] for i in done]
    small = [sd[i] for i in done if size[i] < 100_000]
    return {
        "flows_started": len(t),
        "flows_completed": len(done),
        "slowdown_p50": percentile(slow, 50),
        "slowdown_p95": percentile(slow, 95),
        "slowdown_p99": percentile(slow, 99),
        "slowdown_p99_under_100kb": percentile(small, 99),
        "fct_mean_us": seq_mean([fct[i] for i in done]),
        "retransmitted_frames": sum(t["retransmitted"]),
        "timeouts": sum(t["timeouts"]),
    }


def slowdown_by_size(fct: Any, buckets: tuple[int | None, ...] = SIZE_BUCKETS) -> Any:
    """Per size bucket of flows (`size_bytes` above `lower_bytes` and at most
    `upper_bytes`; null: no upper bound): `flows` that started, how many of
    them `finished` inside the run, and the p50 / p95 / p99 slowdown of the
    finished ones only (a flow still running at the end has no FCT; so a
    bucket whose flows did not finish has null percentiles, and a run cut
    short biases them low). Percentiles interpolate linearly between order
    statistics (PERCENTILE_METHOD). `fct`: a flows DataFrame (`Results.flows`)."""
    import polars as pl

    rows = []
    lower = 0
    sizes = fct["size_bytes"].to_list()
    slow = fct["slowdown"].to_list()
    for upper in buckets:
        inside = [x for s, x in zip(sizes, slow, strict=True) if s > lower and (upper is None or s <= upper)]
        v = [x for x in inside if x is not None]
        rows.append(
            {
                "lower_bytes": lower,
                "upper_bytes": upper,
                "flows": len(inside),
                "finished": len(v),
                "slowdown_p50": percentile(v, 50),
                "slowdown_p95": percentile(v, 95),
                "slowdown_p99": percentile(v, 99),
            }
        )
        lower = upper if upper is not None else lower
    return pl.DataFrame(
        rows,
        schema={
            "lower_bytes": pl.Int64,
            "upper_bytes": pl.Int64,
            "flows": pl.Int64,
            "finished": pl.Int64,
            "slowdown_p50": pl.Float64,
            "slowdown_p95": pl.Float64,
            "slowdown_p99": pl.Float64,
        },
    )


def node_table(run: Any) -> Table:
    """Nodes with `throughput_from_gbps_<window>` / `throughput_to_gbps_<window>`:
    the bytes a station sent / received that were delivered in the window,
    over its length (what a run without per-flow counters has per station)."""
    n = run.table("nodes")
    cols = {}
    for w, a, b in _windows(run):
        for side in ("from", "to"):
            col = f"bytes_{side}_{w}"
            if col in n:
                cols[f"throughput_{side}_gbps_{w}"] = gbps(n[col], b - a)
    return n.with_columns(**cols)


def link_table(run: Any) -> Table:
    """Link directions with `throughput_gbps_<window>` (bytes their sender
    started in the window / its length) and `time_paused_pct`: the share of the
    measure window its sender was paused."""
    ws = _windows(run)
    _, m0, m1 = ws[0]
    links = run.table("links")
    span = float(m1 - m0)
    pct = [fdiv(100.0 * float(p), span) for p in links["paused_ps"]]
    cols = {f"throughput_gbps_{n}": gbps(links[f"bytes_{n}"], b - a) for n, a, b in ws}
    return links.with_columns(**cols, time_paused_pct=pct)


def run_metrics(run: Any) -> dict[str, Any]:
    """The metrics every run has (metrics.md), over the measure window."""
    ws = _windows(run)
    name, m0, m1 = ws[0]
    mlen = m1 - m0
    f = run.frames
    links = link_table(run)
    pct, can, ever = links["time_paused_pct"], links["can_pause"], links["paused_ever"]
    pausable = [p for p, c in zip(pct, can, strict=True) if c]
    paused = [p for p, c, e in zip(pct, can, ever, strict=True) if c and e]
    measure = run.table("windows").row(0)
    delivered = f["delivered"]
    return {
        "aggregate_throughput": (measure["delivered_bytes"] * 8.0 * 1000.0 / mlen) if mlen else 0.0,
        "dropped_cp": f["dropped_cp"],
        "dropped_rp": f["dropped_rp"],
        "dropped_rl": f["dropped_rl"],
        "dropped_nic": f["dropped_nic"],
        "frames_deferred": f["deferred"],
        "time_paused_pct": seq_mean(paused) if paused else None,
        "time_paused_pct_all": seq_mean(pausable) if pausable else 0.0,
        "time_paused_pct_max": max(0.0, max(pausable)) if pausable else 0.0,
        "pause_frames": int(sum(links["pause_frames"])),
        "overhead_mbps": f["note_bytes_measure"] * 8.0 / (mlen / PS_PER_S) / 1e6,
        "frames": f["generated"],
        "frames_delivered": delivered,
        "frame_delay_mean_us": f["delay_sum_ps"] / delivered / 1e6 if delivered > 0 else None,
        "frame_delay_max_us": f["delay_max_ps"] / 1e6 if delivered > 0 else None,
    }


def fairness(rates: list[float], target: float) -> dict[str, float]:
    """dev_max, dev_min, dev_mean, dev_rms and Jain's index of `rates` around
    the fair share `target` (metrics.md, "Fairness")."""
    if not rates:
        return {}
    devs = [abs(r - target) / target for r in rates]
    x = [r / target for r in rates]
    sq = sum(v * v for v in x)
    return {
        "dev_max": max(devs),
        "dev_min": min(devs),
        "dev_mean": sum(devs) / len(devs),
        "dev_rms": math.sqrt(sum((r - target) ** 2 for r in rates) / len(rates)) / target,
        "jain": (sum(x) ** 2) / (len(x) * sq) if sq > 0 else 0.0,
    }


def station_priorities(scenario: Any) -> dict[str, int]:
    """Each station's 802.1p priority as the run has it (its own, else its
    workload's, else `[station]`'s: the engine config's)."""
    return {s["name"]: int(s["priority"]) for s in scenario.engine_part("stations")}


def priority_metrics(run: Any, scenario: Any) -> dict[str, float]:
    """Per priority P in use: `throughput_priority_P` (Gbit/s over the
    measure window: the bits the stations of priority P sent that were
    delivered) when more than one priority is in use; with PFC or more than
    one priority, `pfc_frames_priority_P` (PFC frames naming P, whole run)
    and `time_paused_ms_priority_P` (the time P was paused inside the
    measure window, summed over the link directions); with the PFC
    watchdog, `watchdog_storms_priority_P` and `watchdog_drops_priority_P`;
    with `mmu` buffers, `buffer_drops_priority_P` (frames a buffer limit
    refused: a lossy egress threshold, the pool), `headroom_drops_priority_P`
    (lossless frames that fit neither pool nor headroom) and
    `headroom_peak_bytes_priority_P` (the most headroom one port held);
    with PFC's deadlock detector, `deadlocks` (distinct cycles of paused
    ports found) and `deadlock_at_ms` (the first; None: none). Nothing
    otherwise."""
    prio = station_priorities(scenario)
    used = sorted(set(prio.values()))
    out: dict[str, float] = {}
    if len(used) > 1 and has_flow_records(run):
        out.update(class_flow_metrics(run, prio, used))
    if len(used) > 1:
        nodes = node_table(run)
        col = nodes[f"throughput_from_gbps_{run.window_names[0]}"]
        got = dict.fromkeys(used, 0.0)
        for name, g in zip(nodes["name"], col, strict=True):
            if name in prio:
                got[prio[name]] += g
        out.update({f"throughput_priority_{p}": g for p, g in got.items()})
    watchdog = scenario.model.pause.enabled and scenario.model.pause.watchdog
    mmu = scenario.model.bridge.buffer_mode == "mmu" or any(
        n.kind == "bridge" and n.buffer_mode == "mmu" for n in scenario.model.nodes
    )
    for p in used:
        if f"pfc_frames_priority_{p}" in run.frames:
            out[f"pfc_frames_priority_{p}"] = run.frames[f"pfc_frames_priority_{p}"]
            out[f"time_paused_ms_priority_{p}"] = run.frames[f"paused_ps_priority_{p}"] / 1e9
            if watchdog:
                out[f"watchdog_storms_priority_{p}"] = run.frames[f"watchdog_storms_priority_{p}"]
                out[f"watchdog_drops_priority_{p}"] = run.frames[f"watchdog_drops_priority_{p}"]
            if mmu:
                for k in ("buffer_drops", "headroom_drops", "headroom_peak_bytes"):
                    out[f"{k}_priority_{p}"] = run.frames[f"{k}_priority_{p}"]
    if "deadlocks" in run.frames:
        out["deadlocks"] = run.frames["deadlocks"]
        at = run.frames["deadlock_at_ps"]
        out["deadlock_at_ms"] = None if at is None else at / 1e9
    return out


def class_flow_metrics(run: Any, prio: dict[str, int], used: list[int]) -> dict[str, Any]:
    """Per priority P in use, of the flows whose source sends at P:
    `slowdown_p99_priority_P` and `fct_mean_us_priority_P` (over the flows
    that finished) and `flows_completed_priority_P`."""
    t = fct_table(run)
    out: dict[str, Any] = {}
    for p in used:
        rows = [i for i, s in enumerate(t["src"]) if prio.get(s) == p and t["fct_us"][i] is not None]
        if not any(prio.get(s) == p for s in t["src"]):
            continue
        out[f"flows_completed_priority_{p}"] = len(rows)
        out[f"slowdown_p99_priority_{p}"] = percentile([t["slowdown"][i] for i in rows], 99)
        out[f"fct_mean_us_priority_{p}"] = seq_mean([t["fct_us"][i] for i in rows])
    return out


def collective_metrics(run: Any) -> dict[str, Any]:
    """The run's collectives (`[[jobs]]`): every collective's completion
    time, busbw and ratio to its ideal averaged over all of them and its
    worst, the most senders one receiver had at once, the mean step time
    of the jobs' iterations; None where none finished."""
    c = run.columns.get("collectives")
    it = run.columns.get("iterations")
    if c is None or len(c) == 0:
        return {}

    def done(col: str) -> list[float]:
        return [x for x in c[col] if x is not None and math.isfinite(x)]

    ratio = done("vs_ideal")
    steps = [x for x in (it["step_time_us"] if it is not None else []) if x is not None and math.isfinite(x)]
    return {
        "collectives_completed": len(done("time_us")),
        "collective_time_mean_us": seq_mean(done("time_us")),
        "busbw_mean_gbps": seq_mean(done("busbw_gbps")),
        "collective_vs_ideal_mean": seq_mean(ratio),
        "collective_vs_ideal_max": max(ratio) if ratio else None,
        "max_senders": max(c["max_senders"]) if len(c) else None,
        "step_time_mean_us": seq_mean(steps),
    }


def per_seed(run: Any, scenario: Any) -> dict[str, float | int | None]:
    """Every scalar metric of one run: those of every run, then the
    scenario's own (stability, innocent flows, fairness, utilisation, hotspot)."""
    m: dict[str, float | int | None] = run_metrics(run)
    model = scenario.model
    names = run.window_names
    flows = flow_table(run)
    by_flow = scenario.per_flow()
    nodes = None if by_flow else node_table(run)
    m["frames_reordered"] = run.frames.get("reordered") if by_flow else None

    def into(sink: str, window: str) -> Any:
        """Gbit/s delivered to `sink` in `window`: summed over its flows, or
        its own counter without per-flow counters."""
        if nodes is None:
            col = flows[f"throughput_gbps_{window}"]
            return seq_sum([g for g, d in zip(col, flows["dst"], strict=True) if d == sink])
        node_names = list(nodes["name"])
        if sink not in node_names:
            return None
        return nodes[f"throughput_to_gbps_{window}"][node_names.index(sink)]

    if has_flow_records(run) or model.workload is not None:  # a flow run with no flow: 0 / null
        m.update(flow_metrics(run))
        if scenario.scheme == "uet":
            # The selective transport's and the trimming bridges' counters
            # (the engine leaves a zero out).
            m["frames_trimmed"] = run.frames.get("trimmed", 0)
            m["header_drops"] = run.frames.get("header_drops", 0)
            m["frames_held"] = run.frames.get("held", 0)
            m["fct_acked_mean_us"] = seq_mean([x for x in fct_table(run)["fct_acked_us"] if x is not None])
    if model.jobs:
        m.update(collective_metrics(run))
    if model.stability is not None:
        m.update(stability_metrics(run, scenario))
    if model.innocent is not None:
        sink = model.innocent.sink
        got = into(sink, names[0])
        links = run.table("links")
        rate = dict(zip(links["from"], links["rate_bps"], strict=True))
        offered = sum(
            n.load * (rate[n.name] / 1e9 if n.name in rate else 0.0)
            for n in model.nodes
            if n.kind == "station" and n.load > 0 and n.dest == sink
        )
        m["innocent_throughput"] = got
        m["innocent_offered"] = offered
        m["innocent_share"] = got / offered if offered > 0 else None
    if model.fairness is not None and model.fairness.window in names:
        loaded = {n.name for n in model.nodes if n.kind == "station" and n.load > 0}
        col = f"throughput_gbps_{model.fairness.window}"
        if nodes is None:
            rates = [
                r
                for r, g, s in zip(flows[col], flows["generated"], flows["src"], strict=True)
                if g > 0 and s in loaded
            ]
        else:  # per source
            col = f"throughput_from_gbps_{model.fairness.window}"
            rates = [
                r
                for r, g, s in zip(nodes[col], nodes["generated"], nodes["name"], strict=True)
                if g > 0 and s in loaded
            ]
        m.update(fairness(rates, model.fairness.target_gbps))
    if model.utilization is not None and model.utilization.window in names:
        links = link_table(run)
        link_names = list(links["name"])
        if model.utilization.link in link_names:
            row = links.row(link_names.index(model.utilization.link))
            m["link_utilization"] = row[f"throughput_gbps_{model.utilization.window}"] / (
                row["rate_bps"] / 1e9
            )
    m.update(priority_metrics(run, scenario))
    if model.hotspot is not None:
        m["hot_port_throughput"] = into(model.hotspot.node, names[0])
        if "hotspot" in names:
            rate = model.hotspot.rate_gbps
            delivered = into(model.hotspot.node, "hotspot")
            m["bottleneck_utilization"] = delivered / rate if rate > 0 else None
    return m


def t_quantile(level: float, df: int) -> float:
    """Two-sided Student t quantile: P(|T| <= q) = level with `df` degrees of freedom."""
    if level == 0.95 and 1 <= df:
        from .t975 import T975  # scipy's own values, without importing scipy

        if df <= len(T975):
            return T975[df - 1]
    from scipy.stats import t as student_t  # imported on first use: scipy.stats is slow to import

    return float(student_t.ppf(0.5 + level / 2.0, df))


#: The range of each metric's values, which their mean shares: every metric
#: of metrics.md is >= 0 (counts, rates, times, shares, deviations); these
#: also have an upper bound. A confidence interval never leaves the range.
UPPER_BOUNDS: dict[str, float] = {
    "jain": 1.0,
    "time_paused_pct": 100.0,
    "time_paused_pct_all": 100.0,
    "time_paused_pct_max": 100.0,
}
#: Below this many seeds no interval is given: t(0.975, 1) = 12.7 makes a
#: two-seed interval ten times wider than the spread it saw.
MIN_CI_SEEDS = 3
#: Relative spread below which values differ only by rounding (a standard
#: deviation of 3e-16 around 0.99996 is 0).
NOISE = 1e-12


def bounds(name: str) -> tuple[float, float]:
    """The range of metric `name`'s values: (0, its upper bound or infinity)."""
    return 0.0, UPPER_BOUNDS.get(name, math.inf)


def describe(
    values: list[Any], level: float = 0.95, bounds: tuple[float, float] = (-math.inf, math.inf)
) -> dict[str, Any]:
    """Statistics over seeds of one metric: mean, sample standard deviation,
    the `level` confidence interval of the mean (`ci_low`, `ci_high`), min,
    max, the count `n` of seeds with a value, and the values per seed. A
    value that does not exist (None, NaN) is left out.

    The interval is Student t's over seeds (mean +- t(level, n - 1) x std /
    sqrt(n)) intersected with the metric's range `bounds` (metrics.bounds):
    the true mean lies in the range, so the intersection covers it exactly
    as often as the t interval does, and a Jain's index of 0.97 over seeds
    gets [0.68, 1], not [0.68, 1.26]. With fewer than MIN_CI_SEEDS values
    there is no interval (null), with fewer than two no std. A spread below
    NOISE x |mean| is rounding, not variation: 0."""
    present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    n = len(present)
    out: dict[str, Any] = {
        "mean": None,
        "std": None,
        "ci_low": None,
        "ci_high": None,
        "min": min(present) if present else None,
        "max": max(present) if present else None,
        "n": n,
        "per_seed": list(values),
    }
    if not present:
        return out
    lo, hi = bounds
    mean = math.fsum(present) / n
    if out["min"] == out["max"]:
        mean = present[0]  # not a last-bit neighbour of it
    mean = min(max(mean, out["min"]), out["max"])
    out["mean"] = mean
    if n >= 2:
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in present) / (n - 1))
        if std <= NOISE * abs(mean):
            std = 0.0
        out["std"] = std
        if n >= MIN_CI_SEEDS:
            half = t_quantile(level, n - 1) * std / math.sqrt(n)
            out.update(ci_low=max(mean - half, lo), ci_high=min(mean + half, hi))
    return out


def summarize(per_seed_metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{metric: describe(values over seeds, within the metric's bounds)},
    metrics in order of first appearance."""
    names: list[str] = []
    for m in per_seed_metrics:
        for k in m:
            if k not in names:
                names.append(k)
    return {k: describe([m.get(k) for m in per_seed_metrics], bounds=bounds(k)) for k in names}


def ci_text(stats: dict[str, Any], fmt: Any = lambda v: f"{v:.4g}") -> str:
    """A metric's confidence interval as people read it: `[low, high]`,
    `+- 0` when every seed gave the same value, `n < 3: no CI` with too few
    seeds, '' with no value at all."""
    if stats.get("mean") is None:
        return ""
    if stats.get("ci_low") is None:
        return f"n < {MIN_CI_SEEDS}: no CI" if stats.get("n", 0) < MIN_CI_SEEDS else ""
    if stats["ci_low"] == stats["ci_high"]:
        return "+- 0"
    return f"[{fmt(stats['ci_low'])}, {fmt(stats['ci_high'])}]"


# ------------------------------------------------------- time to stability


def time_to_stability(
    q_max: Any, q_end: Any, bin_ms: float, threshold: float
) -> tuple[float | None, float | None]:
    """(onset, stable) times in ms from a binned queue trace: onset at the start
    of the first bin whose maximum reaches `threshold`, stability at the end of
    the first later bin that ends below it. None where it never happens."""
    onset = next((i for i, v in enumerate(q_max) if v >= threshold), None)
    if onset is None:
        return None, None
    below = next((i for i in range(onset, len(q_end)) if q_end[i] < threshold), None)
    if below is None:
        return onset * bin_ms, None
    return onset * bin_ms, (below + 1) * bin_ms


def stability_metrics(run: Any, scenario: Any) -> dict[str, Any]:
    from .schemes import TABLES, qeq_bytes

    st = scenario.model.stability
    # Without a scheme (PAUSE alone), the threshold is BCN's baseline Qeq.
    qeq = qeq_bytes(scenario.table) or qeq_bytes(TABLES["bcn"]())
    assert qeq is not None
    threshold = st.factor * qeq
    q_max, q_end = run.series_values("queue_bytes_max", st.port), run.series_values("queue_bytes", st.port)
    if q_max is None or q_end is None:
        return {}
    onset, stable = time_to_stability(q_max, q_end, run.bin_ps / 1e9, threshold)
    return {
        "congestion_onset_ms": onset,
        "time_to_stability_ms": stable,
        "time_to_stability_since_onset_ms": None if stable is None or onset is None else stable - onset,
    }


# -------------------------------------------------------- transient duration


def relative_change(x: Any) -> Any:
    """rc(l) = (x(l) - x) / x, x(l) the mean with the first l bins deleted
    (Jain 1991, initial data deletion), for l = 0 .. n - 1."""
    import numpy as np

    n = len(x)
    total = float(np.sum(x))
    overall = total / n
    tail_sums = total - np.concatenate(([0.0], np.cumsum(x)[:-1]))
    means = tail_sums / (n - np.arange(n))
    return (means - overall) / overall


def knee(rc: Any, epsilon: float) -> int:
    """The smallest l such that |rc(l') - rc(l)| <= epsilon for every l' from l to n/2."""
    import numpy as np

    half = len(rc) // 2
    for l_ in range(half + 1):
        if np.all(np.abs(rc[l_ : half + 1] - rc[l_]) <= epsilon):
            return l_
    return half


def smooth(x: Any, width: int) -> Any:
    """Centred moving average over `width` bins; near the ends the window is
    cut to the bins that exist."""
    import numpy as np

    width = max(1, int(width))
    if width == 1 or len(x) == 0:
        return np.asarray(x, dtype=float)
    c = np.concatenate(([0.0], np.cumsum(x, dtype=float)))
    n = len(x)
    lo = np.clip(np.arange(n) - (width - 1) // 2, 0, n)
    hi = np.clip(np.arange(n) + width // 2 + 1, 0, n)
    return (c[hi] - c[lo]) / (hi - lo)


def settling(x: Any, band: float, width: int) -> tuple[int | None, float]:
    """Settling time of a series (in bins from its start): the first bin after
    which the series, smoothed over `width` bins, stays within `band` (a
    fraction) of its steady mean, the mean of its second half. Returns
    (bin, steady mean); the bin is None when the last smoothed value is
    still outside the band (not settled by the end)."""
    import numpy as np

    x = np.asarray(x, dtype=float)
    n = len(x)
    if n == 0:
        return None, float("nan")
    steady = float(np.mean(x[n // 2 :]))
    s = smooth(x, width)
    outside = np.flatnonzero(np.abs(s - steady) > band * abs(steady))
    if outside.size == 0:
        return 0, steady
    last = int(outside[-1])
    return (None if last == n - 1 else last + 1), steady


def transient(results: Any) -> dict[str, Any] | None:
    """Transient duration of the aggregate throughput over all replications:
    {transient_ms, transient_rtts, rtt_ms, epsilon, bin_ms, knee_bin, rc}: the
    knee of the replications' mean curve; beside it the knee of each
    replication's own curve (transient_rep_ms, in seed order) and their
    median, quartiles and range (transient_rep_*_ms)."""
    tr = results.scenario.model.transient
    if tr is None:
        return None
    import numpy as np

    curves = []
    for run in results.runs:
        bin_ms = run.bin_ps / 1e9
        agg = run.series_values("aggregate_throughput", "all")
        if agg is None:
            return None
        agg = np.asarray(agg)
        t = np.arange(len(agg)) * bin_ms
        end = tr.end_ms if tr.end_ms is not None else len(agg) * bin_ms
        per = max(1, round(tr.bin_ms / bin_ms))
        sel = agg[(t >= tr.onset_ms - 1e-9) & (t < end - 1e-9)]
        sel = sel[: len(sel) // per * per]
        curves.append(sel.reshape(-1, per).mean(axis=1))
    n = min(len(c) for c in curves)
    if n < 4:
        return None
    x = np.mean([c[:n] for c in curves], axis=0)
    rc = relative_change(x)
    k = knee(rc, tr.epsilon)
    # The same rule on each replication's own curve: the source's throughput
    # plots are single replications (docs/calibration.md, issue 29).
    reps = np.array([knee(relative_change(c[:n]), tr.epsilon) for c in curves], dtype=float) * tr.bin_ms
    ms = k * tr.bin_ms
    width = max(1, round(tr.settle_smooth_ms / tr.bin_ms))
    settle_bin, steady = settling(x, tr.settle_band, width)
    settle_ms = None if settle_bin is None else settle_bin * tr.bin_ms
    return {
        "transient_ms": ms,
        "transient_rtts": ms / tr.rtt_ms,
        "transient_rep_median_ms": float(np.median(reps)),
        "transient_rep_q1_ms": float(np.percentile(reps, 25)),
        "transient_rep_q3_ms": float(np.percentile(reps, 75)),
        "transient_rep_min_ms": float(reps.min()),
        "transient_rep_max_ms": float(reps.max()),
        "transient_rep_ms": reps.tolist(),
        "settling_ms": settle_ms,
        "settling_rtts": None if settle_ms is None else settle_ms / tr.rtt_ms,
        "steady_gbps": steady,
        "settle_band": tr.settle_band,
        "settle_smooth_ms": tr.settle_smooth_ms,
        "rtt_ms": tr.rtt_ms,
        "epsilon": tr.epsilon,
        "bin_ms": tr.bin_ms,
        "knee_bin": k,
        "rc": rc.tolist(),
        "mean_series": x.tolist(),
        "smoothed_series": smooth(x, width).tolist(),
    }
