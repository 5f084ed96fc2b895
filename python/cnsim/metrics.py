"""Every metric of metrics.md, computed in one place from what a run
recorded (the engine's raw counter tables, `cnsim.engine.SeedRun`): scalar
metrics per seed (throughput, fairness, drops, PAUSE, overhead, delays),
their statistics over seeds (mean, standard deviation, 95% confidence
interval), the derived per-flow and per-link tables, time to stability and
the transient duration. Nothing here runs inside the engine's hot path.

Sums over flows and links are sequential (`cum_sum().last()`), as the
engine's were, so every figure is reproducible to the last bit."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

#: Metrics whose value is a count (reported as integers).
COUNTS = {
    "dropped_cp",
    "dropped_rp",
    "dropped_rl",
    "dropped_nic",
    "frames_deferred",
    "pause_frames",
    "frames",
    "frames_delivered",
}

PS_PER_S = 1e12


def gbps(bytes_: Any, ps: float) -> np.ndarray:
    """Gbit/s of byte counts over `ps` picoseconds (0 when `ps` is 0),
    elementwise as bytes x 8 x 1000 / ps. Computed with numpy, which divides
    each element (polars multiplies by the reciprocal of a scalar divisor,
    which can differ in the last bit)."""
    b = np.asarray(bytes_, dtype=np.float64)
    if ps == 0:
        return np.zeros_like(b)
    return b * 8.0 * 1000.0 / float(ps)


def seq_sum(expr: pl.Expr) -> pl.Expr:
    """Sum in row order (as a loop would add them), 0 for no rows."""
    return expr.cum_sum().last().fill_null(0.0)


def seq_mean(expr: pl.Expr) -> pl.Expr:
    """Mean in row order, null for no rows."""
    return expr.cum_sum().last() / pl.len()


def _windows(run: Any) -> list[tuple[str, int, int]]:
    w = run.tables["windows"]
    return list(zip(w["name"].to_list(), w["start_ps"].to_list(), w["end_ps"].to_list(), strict=True))


def flow_table(run: Any) -> pl.DataFrame:
    """Flows (src, dst) with frames generated / delivered and
    `throughput_gbps_<window>`: bytes delivered in each window / its length."""
    f = run.tables["flows"]
    return f.with_columns(
        [pl.Series(f"throughput_gbps_{n}", gbps(f[f"bytes_{n}"], b - a)) for n, a, b in _windows(run)]
    )


#: Size buckets (bytes, upper bounds) of the slowdown percentiles: the
#: boundaries of the web-search CDF's steps that FCT studies plot.
SIZE_BUCKETS = (10_000, 30_000, 100_000, 1_000_000, 10_000_000, float("inf"))
#: Unfinished flows' finish time in the engine's records.
_NEVER = 2**64 - 1


def has_flow_records(run: Any) -> bool:
    """The run carried transport flows (a `[workload]`)."""
    t = run.tables.get("flow_records")
    return t is not None and len(t) > 0


def fct_table(run: Any) -> pl.DataFrame:
    """One row per transport flow: the engine's record (`src`, `dst`,
    `size_bytes`, `start_ps`, `finish_ps`, `ideal_fct_ps`, `retransmitted`,
    `timeouts`, `hops`) and `start_us`, `finish_us`, `fct_us`,
    `ideal_fct_us` and `slowdown` (FCT over the ideal FCT: the same flow alone
    on the empty network along its path); null for a flow that did not
    finish inside the run."""
    t = run.tables["flow_records"]
    done = pl.col("finish_ps") != _NEVER
    return t.with_columns(
        (pl.col("start_ps").cast(pl.Float64) / 1e6).alias("start_us"),
        pl.when(done).then(pl.col("finish_ps").cast(pl.Float64) / 1e6).otherwise(None).alias("finish_us"),
        pl.when(done)
        .then((pl.col("finish_ps") - pl.col("start_ps")).cast(pl.Float64) / 1e6)
        .otherwise(None)
        .alias("fct_us"),
        (pl.col("ideal_fct_ps").cast(pl.Float64) / 1e6).alias("ideal_fct_us"),
    ).with_columns((pl.col("fct_us") / pl.col("ideal_fct_us")).alias("slowdown"))


def _pct(v: np.ndarray, q: float) -> float | None:
    return float(np.percentile(v, q)) if len(v) else None


def flow_metrics(run: Any) -> dict[str, Any]:
    """FCT metrics of a run with transport flows: flows started and
    completed, slowdown percentiles (all flows, and flows under 100 KB),
    mean FCT; over the flows that finished."""
    t = fct_table(run)
    done = t.filter(pl.col("fct_us").is_not_null())
    sd = done["slowdown"].to_numpy()
    small = done.filter(pl.col("size_bytes") < 100_000)["slowdown"].to_numpy()
    return {
        "flows_started": len(t),
        "flows_completed": len(done),
        "slowdown_p50": _pct(sd, 50),
        "slowdown_p95": _pct(sd, 95),
        "slowdown_p99": _pct(sd, 99),
        "slowdown_p99_under_100kb": _pct(small, 99),
        "fct_mean_us": float(done["fct_us"].mean()) if len(done) else None,  # type: ignore[arg-type]
        "retransmitted_frames": int(t["retransmitted"].sum()),
        "timeouts": int(t["timeouts"].sum()),
    }


def slowdown_by_size(fct: pl.DataFrame, buckets: tuple[float, ...] = SIZE_BUCKETS) -> pl.DataFrame:
    """Per size bucket (flows with size <= `upper_bytes` and above the
    previous bound): flows, and the p50 / p95 / p99 slowdown of those that
    finished."""
    rows = []
    lower = 0.0
    done = fct.filter(pl.col("slowdown").is_not_null())
    for upper in buckets:
        part = done.filter((pl.col("size_bytes") > lower) & (pl.col("size_bytes") <= upper))
        v = part["slowdown"].to_numpy()
        rows.append(
            {
                "lower_bytes": lower,
                "upper_bytes": upper,
                "flows": len(v),
                "slowdown_p50": _pct(v, 50),
                "slowdown_p95": _pct(v, 95),
                "slowdown_p99": _pct(v, 99),
            }
        )
        lower = upper
    return pl.DataFrame(
        rows,
        schema_overrides={"slowdown_p50": pl.Float64, "slowdown_p95": pl.Float64, "slowdown_p99": pl.Float64},
    )


def node_table(run: Any) -> pl.DataFrame:
    """Nodes with `throughput_from_gbps_<window>` / `throughput_to_gbps_<window>`:
    the bytes a station sent / received that were delivered in the window,
    over its length (what a run without per-flow counters has per station)."""
    n = run.tables["nodes"]
    cols = []
    for w, a, b in _windows(run):
        for side in ("from", "to"):
            col = f"bytes_{side}_{w}"
            if col in n.columns:
                cols.append(pl.Series(f"throughput_{side}_gbps_{w}", gbps(n[col], b - a)))
    return n.with_columns(cols)


def link_table(run: Any) -> pl.DataFrame:
    """Link directions with `throughput_gbps_<window>` (bytes their sender
    started in the window / its length) and `time_paused_pct`: the share of the
    measure window its sender was paused."""
    ws = _windows(run)
    _, m0, m1 = ws[0]
    links = run.tables["links"]
    pct = 100.0 * links["paused_ps"].to_numpy().astype(np.float64) / float(m1 - m0)
    return links.with_columns(
        [pl.Series(f"throughput_gbps_{n}", gbps(links[f"bytes_{n}"], b - a)) for n, a, b in ws]
        + [pl.Series("time_paused_pct", pct)]
    )


def run_metrics(run: Any) -> dict[str, Any]:
    """The metrics every run has (metrics.md), over the measure window."""
    ws = _windows(run)
    name, m0, m1 = ws[0]
    mlen = m1 - m0
    f = run.frames
    links = link_table(run)
    pausable = links.filter(pl.col("can_pause"))
    paused = pausable.filter(pl.col("paused_ever"))
    pcts = pausable.select(
        seq_mean(pl.col("time_paused_pct")).alias("all"),
        pl.col("time_paused_pct").max().alias("max"),
    ).row(0, named=True)
    measure = run.tables["windows"].row(0, named=True)
    delivered = f["delivered"]
    return {
        "aggregate_throughput": (measure["delivered_bytes"] * 8.0 * 1000.0 / mlen) if mlen else 0.0,
        "dropped_cp": f["dropped_cp"],
        "dropped_rp": f["dropped_rp"],
        "dropped_rl": f["dropped_rl"],
        "dropped_nic": f["dropped_nic"],
        "frames_deferred": f["deferred"],
        "time_paused_pct": paused.select(seq_mean(pl.col("time_paused_pct"))).item() if len(paused) else None,
        "time_paused_pct_all": pcts["all"] if len(pausable) else 0.0,
        "time_paused_pct_max": max(0.0, pcts["max"]) if len(pausable) else 0.0,
        "pause_frames": int(links["pause_frames"].sum()),
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


def per_seed(run: Any, scenario: Any) -> dict[str, float | int | None]:
    """Every scalar metric of one run: those of every run, then the
    scenario's own (stability, innocent flows, fairness, utilisation, hotspot)."""
    from .scenario.resolve import per_flow

    m: dict[str, float | int | None] = run_metrics(run)
    model = scenario.model
    names = run.window_names
    flows = flow_table(run)
    by_flow = per_flow(model)
    nodes = None if by_flow else node_table(run)
    m["frames_reordered"] = run.frames.get("reordered") if by_flow else None

    def into(sink: str, window: str) -> Any:
        """Gbit/s delivered to `sink` in `window`: summed over its flows, or
        its own counter without per-flow counters."""
        if nodes is None:
            return (
                flows.filter(pl.col("dst") == sink)
                .select(seq_sum(pl.col(f"throughput_gbps_{window}")))
                .item()
            )
        row = nodes.filter(pl.col("name") == sink)
        return row[f"throughput_to_gbps_{window}"].item() if len(row) else None

    if has_flow_records(run) or model.workload is not None:  # a flow run with no flow: 0 / null
        m.update(flow_metrics(run))
    if model.stability is not None:
        m.update(stability_metrics(run, scenario))
    if model.innocent is not None:
        sink = model.innocent.sink
        got = into(sink, names[0])
        rate = dict(
            zip(run.tables["links"]["from"].to_list(), run.tables["links"]["rate_bps"].to_list(), strict=True)
        )
        offered = sum(
            n.load * (rate[n.name] / 1e9 if n.name in rate else 0.0)
            for n in model.nodes
            if n.kind == "station" and n.load > 0 and n.dest == sink
        )
        m["innocent_throughput"] = got
        m["innocent_offered"] = offered
        m["innocent_share"] = got / offered if offered > 0 else None
    if model.fairness is not None and model.fairness.window in names:
        loaded = [n.name for n in model.nodes if n.kind == "station" and n.load > 0]
        if nodes is None:
            rates = flows.filter((pl.col("generated") > 0) & pl.col("src").is_in(loaded))[
                f"throughput_gbps_{model.fairness.window}"
            ].to_list()
        else:  # per source
            rates = nodes.filter((pl.col("generated") > 0) & pl.col("name").is_in(loaded))[
                f"throughput_from_gbps_{model.fairness.window}"
            ].to_list()
        m.update(fairness(rates, model.fairness.target_gbps))
    if model.utilization is not None and model.utilization.window in names:
        link = link_table(run).filter(pl.col("name") == model.utilization.link)
        if len(link):
            row = link.row(0, named=True)
            m["link_utilization"] = row[f"throughput_gbps_{model.utilization.window}"] / (
                row["rate_bps"] / 1e9
            )
    if model.hotspot is not None:
        m["hot_port_throughput"] = into(model.hotspot.node, names[0])
        if "hotspot" in names:
            rate = model.hotspot.rate_gbps
            delivered = into(model.hotspot.node, "hotspot")
            m["bottleneck_utilization"] = delivered / rate if rate > 0 else None
    return m


def t_quantile(level: float, df: int) -> float:
    """Two-sided Student t quantile: P(|T| <= q) = level with `df` degrees of freedom."""
    from scipy.stats import t as student_t  # imported on first use: scipy.stats is slow to import

    return float(student_t.ppf(0.5 + level / 2.0, df))


def describe(values: list[Any], level: float = 0.95) -> dict[str, Any]:
    """Statistics over seeds of one metric: mean, sample standard deviation,
    the `level` confidence interval of the mean (Student t over seeds,
    `ci_low` / `ci_high`, and its half-width `ci_half`), min, max, the count
    `n` of seeds with a value, and the values per seed. A value that does not
    exist (None, NaN) is left out; with fewer than two values the spread is
    null."""
    present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    n = len(present)
    out: dict[str, Any] = {
        "mean": sum(present) / n if present else None,
        "std": None,
        "ci_low": None,
        "ci_high": None,
        "ci_half": None,
        "min": min(present) if present else None,
        "max": max(present) if present else None,
        "n": n,
        "per_seed": list(values),
    }
    if n >= 2:
        mean = out["mean"]
        std = math.sqrt(sum((v - mean) ** 2 for v in present) / (n - 1))
        half = t_quantile(level, n - 1) * std / math.sqrt(n)
        out.update(std=std, ci_low=mean - half, ci_high=mean + half, ci_half=half)
    return out


def summarize(per_seed_metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{metric: describe(values over seeds)}, metrics in order of first appearance."""
    names: list[str] = []
    for m in per_seed_metrics:
        for k in m:
            if k not in names:
                names.append(k)
    return {k: describe([m.get(k) for m in per_seed_metrics]) for k in names}


# ------------------------------------------------------- time to stability


def time_to_stability(
    q_max: np.ndarray, q_end: np.ndarray, bin_ms: float, threshold: float
) -> tuple[float | None, float | None]:
    """(onset, stable) times in ms from a binned queue trace: onset at the start
    of the first bin whose maximum reaches `threshold`, stability at the end of
    the first later bin that ends below it. None where it never happens."""
    hit = np.flatnonzero(q_max >= threshold)
    if hit.size == 0:
        return None, None
    onset = int(hit[0])
    below = np.flatnonzero(q_end[onset:] < threshold)
    if below.size == 0:
        return onset * bin_ms, None
    return onset * bin_ms, (onset + int(below[0]) + 1) * bin_ms


def stability_metrics(run: Any, scenario: Any) -> dict[str, Any]:
    from .schemes import TABLES, qeq_bytes

    st = scenario.model.stability
    # Without a scheme (PAUSE alone), the threshold is BCN's baseline Qeq.
    qeq = qeq_bytes(scenario.table) or qeq_bytes(TABLES["bcn"]())
    assert qeq is not None
    threshold = st.factor * qeq
    by = {(s, k): v for s, k, v in run.series}
    q_max, q_end = by.get(("queue_bytes_max", st.port)), by.get(("queue_bytes", st.port))
    if q_max is None or q_end is None:
        return {}
    onset, stable = time_to_stability(np.asarray(q_max), np.asarray(q_end), run.bin_ps / 1e9, threshold)
    return {
        "congestion_onset_ms": onset,
        "time_to_stability_ms": stable,
        "time_to_stability_since_onset_ms": None if stable is None or onset is None else stable - onset,
    }


# -------------------------------------------------------- transient duration


def relative_change(x: np.ndarray) -> np.ndarray:
    """rc(l) = (x(l) - x) / x, x(l) the mean with the first l bins deleted
    (Jain 1991, initial data deletion), for l = 0 .. n - 1."""
    n = len(x)
    total = float(np.sum(x))
    overall = total / n
    tail_sums = total - np.concatenate(([0.0], np.cumsum(x)[:-1]))
    means = tail_sums / (n - np.arange(n))
    return (means - overall) / overall


def knee(rc: np.ndarray, epsilon: float) -> int:
    """The smallest l such that |rc(l') - rc(l)| <= epsilon for every l' from l to n/2."""
    half = len(rc) // 2
    for l_ in range(half + 1):
        if np.all(np.abs(rc[l_ : half + 1] - rc[l_]) <= epsilon):
            return l_
    return half


def smooth(x: np.ndarray, width: int) -> np.ndarray:
    """Centred moving average over `width` bins; near the ends the window is
    cut to the bins that exist."""
    width = max(1, int(width))
    if width == 1 or len(x) == 0:
        return np.asarray(x, dtype=float)
    c = np.concatenate(([0.0], np.cumsum(x, dtype=float)))
    n = len(x)
    lo = np.clip(np.arange(n) - (width - 1) // 2, 0, n)
    hi = np.clip(np.arange(n) + width // 2 + 1, 0, n)
    return (c[hi] - c[lo]) / (hi - lo)


def settling(x: np.ndarray, band: float, width: int) -> tuple[int | None, float]:
    """Settling time of a series (in bins from its start): the first bin after
    which the series, smoothed over `width` bins, stays within `band` (a
    fraction) of its steady mean, the mean of its second half. Returns
    (bin, steady mean); the bin is None when the last smoothed value is
    still outside the band (not settled by the end)."""
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
    {transient_ms, transient_rtts, rtt_ms, epsilon, bin_ms, knee_bin, rc}."""
    tr = results.scenario.model.transient
    if tr is None:
        return None
    curves = []
    for run in results.runs:
        bin_ms = run.bin_ps / 1e9
        agg = next((v for s, k, v in run.series if s == "aggregate_throughput"), None)
        if agg is None:
            return None
        t = np.arange(len(agg)) * bin_ms
        end = tr.end_ms if tr.end_ms is not None else len(agg) * bin_ms
        per = max(1, round(tr.bin_ms / bin_ms))
        sel = np.asarray(agg)[(t >= tr.onset_ms - 1e-9) & (t < end - 1e-9)]
        sel = sel[: len(sel) // per * per]
        curves.append(sel.reshape(-1, per).mean(axis=1))
    n = min(len(c) for c in curves)
    if n < 4:
        return None
    x = np.mean([c[:n] for c in curves], axis=0)
    rc = relative_change(x)
    k = knee(rc, tr.epsilon)
    ms = k * tr.bin_ms
    width = max(1, round(tr.settle_smooth_ms / tr.bin_ms))
    settle_bin, steady = settling(x, tr.settle_band, width)
    settle_ms = None if settle_bin is None else settle_bin * tr.bin_ms
    return {
        "transient_ms": ms,
        "transient_rtts": ms / tr.rtt_ms,
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
