"""Metrics of metrics.md computed from what a run recorded: scalar metrics
per seed (throughput, fairness, drops, PAUSE, overhead) and their statistics
over seeds. Nothing here runs inside the engine's hot path."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: Metrics whose value is a count (reported as integers).
COUNTS = {"dropped_cp", "dropped_rp", "pause_frames", "frames", "frames_delivered"}


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


def _window_index(result: dict[str, Any], name: str) -> int | None:
    for i, w in enumerate(result["windows"]):
        if w["name"] == name:
            return i
    return None


def per_seed(
    result: dict[str, Any], scenario: Any, series: list[tuple[str, str, Any]] | None = None
) -> dict[str, float | int | None]:
    """Every scalar metric of one run (`result`: the engine's results JSON,
    `series`: its time series)."""
    m: dict[str, float | int | None] = dict(result["metrics"])
    model = scenario.model
    if model.stability is not None and series is not None:
        m.update(stability_metrics(result, scenario, series))
    if model.innocent is not None:
        sink = model.innocent.sink
        got = sum(f["throughput_gbps"][0] for f in result["flows"] if f["dst"] == sink)
        rate = {lk["from"]: lk["rate_bps"] / 1e9 for lk in result["links"]}
        offered = sum(
            n.load * rate.get(n.name, 0.0)
            for n in model.nodes
            if n.kind == "station" and n.load > 0 and n.dest == sink
        )
        m["innocent_throughput"] = got
        m["innocent_offered"] = offered
        m["innocent_share"] = got / offered if offered > 0 else None
    if model.fairness is not None:
        w = _window_index(result, model.fairness.window)
        if w is not None:
            rates = [
                f["throughput_gbps"][w]
                for f in result["flows"]
                if f["generated"] > 0 and _loaded(scenario, f["src"])
            ]
            m.update(fairness(rates, model.fairness.target_gbps))
    if model.utilization is not None:
        w = _window_index(result, model.utilization.window)
        link = next((x for x in result["links"] if x["name"] == model.utilization.link), None)
        if w is not None and link is not None:
            m["link_utilization"] = link["throughput_gbps"][w] / (link["rate_bps"] / 1e9)
    if model.hotspot is not None:
        hot = model.hotspot.node
        m["hot_port_throughput"] = sum(f["throughput_gbps"][0] for f in result["flows"] if f["dst"] == hot)
        w = _window_index(result, "hotspot")
        if w is not None:
            rate = model.hotspot.rate_gbps
            delivered = sum(f["throughput_gbps"][w] for f in result["flows"] if f["dst"] == hot)
            m["bottleneck_utilization"] = delivered / rate if rate > 0 else None
    return m


def _loaded(scenario: Any, name: str) -> bool:
    return any(n.name == name and n.load > 0 for n in scenario.model.nodes)


def summarize(per_seed_metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{metric: {mean, min, max, per_seed}} with null where a value is missing."""
    names: list[str] = []
    for m in per_seed_metrics:
        for k in m:
            if k not in names:
                names.append(k)
    out: dict[str, dict[str, Any]] = {}
    for k in names:
        vals = [m.get(k) for m in per_seed_metrics]
        present = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
        out[k] = {
            "mean": sum(present) / len(present) if present else None,
            "min": min(present) if present else None,
            "max": max(present) if present else None,
            "per_seed": vals,
        }
    return out


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


def stability_metrics(
    result: dict[str, Any], scenario: Any, series: list[tuple[str, str, Any]]
) -> dict[str, Any]:
    from .schemes import BcnTable, qeq_bytes

    st = scenario.model.stability
    qeq = qeq_bytes(scenario.scheme, scenario.table) or BcnTable().qeq_bytes()
    threshold = st.factor * qeq
    by = {(s, k): v for s, k, v in series}
    q_max, q_end = by.get(("queue_bytes_max", st.port)), by.get(("queue_bytes", st.port))
    if q_max is None or q_end is None:
        return {}
    onset, stable = time_to_stability(np.asarray(q_max), np.asarray(q_end), result["bin_ps"] / 1e9, threshold)
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
        bin_ms = run.result["bin_ps"] / 1e9
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
