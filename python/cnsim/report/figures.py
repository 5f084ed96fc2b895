"""The report's figures, each a matplotlib `Figure` built without pyplot:
no global state, no backend switch, so they are safe in notebooks and
threads. A caller saves one with `fig.savefig(path)` or shows it."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..metrics import bounds, describe
from ..schemes import qeq_bytes

_SMOOTH_MS = 1.0  # throughput curves are averaged over 1 ms for legibility


def _or_nan(v: float | None) -> float:
    return np.nan if v is None else v


def _series(res: Any, name: str, seed_index: int = 0) -> tuple[float, list[tuple[str, np.ndarray]]]:
    run = res.runs[seed_index]
    bin_ms = run.bin_ps / 1e9
    # A flow run that ends when its last flow does stops before its
    # duration: draw only up to its end, not the empty bins after.
    n = -(-run.end_ps // run.bin_ps)
    return bin_ms, [(k, v[:n]) for (s, k, v) in run.series if s == name]


def _smooth(v: np.ndarray, bin_ms: float) -> np.ndarray:
    n = max(1, round(_SMOOTH_MS / bin_ms))
    if n == 1 or len(v) < n:
        return v
    k = np.ones(n)
    # Normalise by the samples actually inside the window, so the edges do not sag.
    return np.convolve(v, k, mode="same") / np.convolve(np.ones(len(v)), k, mode="same")


def _layout(fig: Any, top_in: float = 0.4, hspace: float = 0.12) -> None:
    """Fixed margins in inches around the axes: room for the tick labels,
    axis labels and a one-line title (`top_in` for more). The run report's
    figures have known labels, so this replaces `tight_layout`, which
    renders every figure once more only to measure it (a third of the
    report's time)."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=0.8 / w, right=1 - 0.15 / w, bottom=0.55 / h, top=1 - top_in / h, hspace=hspace)


def _finish(fig: Any, ax: Any, ylabel: str, title: str, ncol: int = 2) -> Any:
    """The time axis, labels, grid and legend every time-series figure shares."""
    ax.set_xlabel("time (ms)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=ncol)
    _layout(fig)
    return fig


def series_figure(res: Any, name: str) -> Any:
    fig = Figure(figsize=(9, 4.2))
    ax = fig.subplots()
    bin_ms, ser = _series(res, name)
    if not ser:
        ax.text(0.5, 0.5, f"no series '{name}'", ha="center", transform=ax.transAxes)
        return fig
    for k, v in ser[:24]:
        t = np.arange(len(v)) * bin_ms
        y = _smooth(v, bin_ms) if name.endswith("throughput") or name == "rl_rate" else v
        ax.plot(t, y, lw=1, label=k)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel(name)
    ax.grid(alpha=0.3)
    if len(ser) <= 12:
        ax.legend(fontsize=7, ncol=2)
    _layout(fig, top_in=0.15)
    return fig


def throughput_fig(res: Any) -> Any:
    fig = Figure(figsize=(9, 4.2))
    ax = fig.subplots()
    bin_ms, flows = _series(res, "flow_throughput")
    _, agg = _series(res, "aggregate_throughput")
    if not flows:
        _, flows = _series(res, "delivered_throughput")
    for k, v in flows[:16]:
        ax.plot(np.arange(len(v)) * bin_ms, _smooth(v, bin_ms), lw=1, label=k)
    for _, v in agg:
        ax.plot(np.arange(len(v)) * bin_ms, _smooth(v, bin_ms), lw=1.6, color="black", label="aggregate")
    fair = res.scenario.model.fairness
    if fair is not None:
        ax.axhline(fair.target_gbps, ls="--", color="grey", lw=1, label="fair share")
    return _finish(
        fig, ax, "throughput (Gbit/s, 1 ms average)", f"Throughput, seed {res.runs[0].seed}", ncol=3
    )


def queue_fig(res: Any) -> Any | None:
    bin_ms, qs = _series(res, "queue_bytes")
    _, qmax = _series(res, "queue_bytes_max")
    if not qs:
        return None
    fig = Figure(figsize=(9, 4.2))
    ax = fig.subplots()
    maxes = dict(qmax)
    for k, v in qs[:12]:
        t = np.arange(len(v)) * bin_ms
        (line,) = ax.plot(t, v / 1000, lw=1, label=f"{k} (bin end)")
        if k in maxes:
            ax.plot(t, maxes[k] / 1000, lw=0.6, alpha=0.5, color=line.get_color(), label=f"{k} (bin max)")
    sc = res.scenario
    q = qeq_bytes(sc.table)
    if q:
        ax.axhline(q / 1000, ls="--", color="green", lw=1, label=f"Qeq {q / 1000:.1f} KB")
    trigger = sc.model.pause.trigger
    if trigger == "auto":
        trigger = "output_queue" if sc.model.bridge.buffer_mode in ("per_output", "infinite") else "other"
    if sc.pause and trigger == "output_queue":  # XOFF watches this very queue
        ax.axhline(sc.model.pause.xoff_bytes / 1000, ls=":", color="red", lw=1, label="XOFF")
    buffers = {
        b["name"]: b["buffer_bytes"] for b in sc.engine_part("bridges") if b["buffer_mode"] == "per_output"
    }
    sizes = {buffers[k.partition("->")[0]] for k, _ in qs[:12] if k.partition("->")[0] in buffers}
    if len(sizes) == 1:  # one buffer size for every plotted port: draw it
        size = sizes.pop()
        ax.axhline(size / 1000, ls="-.", color="grey", lw=1, label=f"buffer {size / 1000:g} KB")
    return _finish(fig, ax, "queue (KB)", f"CP queue, seed {res.runs[0].seed}")


def rl_fig(res: Any) -> Any | None:
    bin_ms, rates = _series(res, "rl_rate")
    if not rates:
        return None
    fig = Figure(figsize=(9, 4.2))
    ax = fig.subplots()
    for k, v in rates[:16]:
        ax.plot(np.arange(len(v)) * bin_ms, v, lw=1, label=k)
    fair = res.scenario.model.fairness
    if fair is not None:
        ax.axhline(fair.target_gbps, ls="--", color="grey", lw=1, label="fair share")
    return _finish(
        fig, ax, "rate-limiter rate (Gbit/s, at bin end)", f"Reaction points, seed {res.runs[0].seed}"
    )


def window_fig(res: Any) -> Any | None:
    """The traced flow senders' windows (window schemes), in frames."""
    bin_ms, windows = _series(res, "rl_window_bytes")
    if not windows:
        return None
    frame = res.scenario.model.defaults.frame_bytes
    fig = Figure(figsize=(9, 4.2))
    ax = fig.subplots()
    for k, v in windows[:16]:
        ax.step(np.arange(len(v)) * bin_ms, np.asarray(v) / frame, where="post", lw=1, label=k)
    return _finish(
        fig, ax, "sender window (frames, at bin end)", f"Flow senders' windows, seed {res.runs[0].seed}"
    )


def queue_cdf_fig(res: Any) -> Any | None:
    """The traced ports' queue-length distribution over the measure window
    (first seed): the fraction of time the queue was below each length."""
    q = res.queues
    if not len(q):
        return None
    first = q.filter(q["seed"] == res.runs[0].seed)
    fig = Figure(figsize=(9, 4.2))
    ax = fig.subplots()
    for part in first.partition_by("port", maintain_order=True)[:16]:
        upper = (part["lower_bytes"].to_numpy() + res.scenario.model.defaults.frame_bytes) / 1000
        ax.step(
            np.concatenate([[0.0], upper]),
            np.concatenate([[0.0], part["cdf"].to_numpy()]),
            where="post",
            lw=1.2,
            label=part["port"][0],
        )
    ax.set_xlabel("queue length (KB)")
    ax.set_ylabel("fraction of the measure window below")
    ax.set_title(f"Queue length distribution, seed {res.runs[0].seed}")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    _layout(fig)
    return fig


#: Most flows the slowdown figure scatters one point each for.
SCATTER_FLOWS = 100_000


def slowdown_fig(res: Any) -> Any | None:
    """With transport flows: each finished flow's slowdown against its size
    (log-log), and the p50 / p95 / p99 of each size bucket."""
    if not getattr(res, "transport", False):
        return None
    from ..metrics import slowdown_by_size

    # The two columns drawn, once: the whole flows frame of millions of
    # flows is hundreds of MB, and it is dropped here.
    flows = res.flows.select("size_bytes", "slowdown")
    f = flows.filter(flows["slowdown"].is_not_null())
    if len(f) == 0:
        return None
    fig = Figure(figsize=(9, 4.2))
    ax = fig.subplots()
    # Past SCATTER_FLOWS points a scatter is a smear that takes seconds to
    # draw: every k-th flow (the percentiles below are of them all).
    k = -(-len(f) // SCATTER_FLOWS)
    shown = f.gather_every(k) if k > 1 else f
    label = "flows" if k == 1 else f"flows (one in {k} drawn)"
    ax.scatter(shown["size_bytes"].to_numpy(), shown["slowdown"].to_numpy(), s=4, alpha=0.35, label=label)
    by_size = slowdown_by_size(flows)
    b = by_size.filter(by_size["finished"] > 0)
    lower = b["lower_bytes"].to_numpy()
    upper = np.minimum(b["upper_bytes"].fill_null(2**62).to_numpy(), int(f["size_bytes"].max()))
    mid = np.sqrt(np.maximum(lower, 1.0) * upper)
    for q, style in (("slowdown_p50", "o-"), ("slowdown_p95", "s--"), ("slowdown_p99", "^:")):
        ax.plot(mid, b[q].to_numpy(), style, lw=1.5, label=q.replace("slowdown_", ""))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("flow size (bytes)")
    ax.set_ylabel("slowdown (FCT / ideal FCT)")
    ax.set_title(f"FCT slowdown, {res.scenario.model.scheme}, {len(f)} finished flows")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left")  # "best" searches every point
    fig.tight_layout()  # log axes: tick labels of unknown width, measured
    return fig


def paused_fig(res: Any) -> Any | None:
    bin_ms, ps = _series(res, "paused_fraction")
    if not ps:
        return None
    fig = Figure(figsize=(9, 4.2))
    ax = fig.subplots()
    for k, v in ps[:16]:
        ax.plot(np.arange(len(v)) * bin_ms, _smooth(v, bin_ms), lw=1, label=k)
    ax.set_ylim(-0.02, 1.02)
    return _finish(fig, ax, "fraction of time paused (1 ms average)", f"PAUSE, seed {res.runs[0].seed}")


def classes_fig(res: Any) -> Any | None:
    """Per 802.1p priority, in a run with more than one priority in use or
    with PFC: the throughput of each priority's flows (the sum of the flows
    whose source sends at it) and the fraction of time its senders were
    paused (the mean over the stations of that priority), first seed."""
    from ..metrics import station_priorities

    model = res.scenario.model
    prio = station_priorities(res.scenario)
    used = sorted(set(prio.values()))
    pfc = model.pause.enabled and model.pause.mode == "pfc"
    if len(used) < 2 and not pfc:
        return None
    bin_ms, flows = _series(res, "flow_throughput")
    _, paused = _series(res, "paused_fraction")
    fig = Figure(figsize=(9, 6.4))
    top, bottom = fig.subplots(2, 1, sharex=True)
    by_prio: dict[int, np.ndarray] = {}
    for k, v in flows:
        p = prio.get(k.split("->")[0])
        if p is not None:
            by_prio[p] = by_prio.get(p, 0) + v
    for p in sorted(by_prio):
        v = by_prio[p]
        top.plot(np.arange(len(v)) * bin_ms, _smooth(v, bin_ms), lw=1.2, color=f"C{p}", label=f"priority {p}")
    if not by_prio:
        top.text(
            0.5, 0.5, "no per-flow series (stats.per_flow = false)", ha="center", transform=top.transAxes
        )
    top.set_ylabel("throughput (Gbit/s, 1 ms average)")
    top.set_title(f"Per priority, seed {res.runs[0].seed}")
    lossless = set(model.pause.lossless) if pfc else set()
    pauses: dict[int, list[np.ndarray]] = {}
    for k, v in paused:
        p = prio.get(k.split("->")[0])
        if p is not None:
            pauses.setdefault(p, []).append(v)
    for p in sorted(pauses):
        v = np.mean(pauses[p], axis=0)
        kind = "lossless" if p in lossless else "lossy"
        bottom.plot(
            np.arange(len(v)) * bin_ms,
            _smooth(v, bin_ms),
            lw=1.2,
            color=f"C{p}",
            label=f"priority {p} ({kind})",
        )
    bottom.set_ylim(-0.02, 1.02)
    bottom.set_ylabel("senders paused (fraction)")
    bottom.set_xlabel("time (ms)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7, ncol=3)
    _layout(fig)
    return fig


def fairness_fig(res: Any) -> Any | None:
    if "jain" not in res.stats or len(res.runs) < 2:
        return None
    fig = Figure(figsize=(9, 3.4))
    ax = fig.subplots()
    jain = res.metric("jain")
    ax.bar([str(s) for s in res.seeds], jain, color="steelblue")
    ax.set_ylim(min(0.8, min(jain) - 0.02), 1.0)
    ax.set_xlabel("seed")
    ax.set_ylabel("Jain's index")
    ax.set_title("Fairness per seed")
    _layout(fig)
    return fig


def transient_fig(res: Any) -> Any | None:
    tr = res.transient()
    if tr is None:
        return None
    fig = Figure(figsize=(9, 6.5))
    a1, a2 = fig.subplots(2, 1, sharex=True)
    t = np.arange(len(tr["rc"])) * tr["bin_ms"]
    steady, band = tr["steady_gbps"], tr["settle_band"]
    a1.plot(t, tr["mean_series"], lw=0.6, color="0.6", label="mean over seeds")
    a1.plot(
        t, tr["smoothed_series"], lw=1.2, color="black", label=f"smoothed ({tr['settle_smooth_ms']:g} ms)"
    )
    a1.axhspan(
        steady * (1 - band),
        steady * (1 + band),
        color="tab:green",
        alpha=0.15,
        label=f"steady mean +-{band:.0%}",
    )
    a1.set_ylabel("aggregate (Gbit/s)")
    a2.plot(t, tr["rc"], lw=1)
    k = tr["knee_bin"] * tr["bin_ms"]
    for ax in (a1, a2):
        ax.axvline(k, color="red", ls="--", lw=1, label="knee (transient)")
        if tr["settling_ms"] is not None:
            ax.axvline(tr["settling_ms"], color="tab:green", ls=":", lw=1.5, label="settling time")
        ax.grid(alpha=0.3)
    a1.legend(fontsize=8, loc="lower right")
    a2.set_ylabel("relative change rc(l)")
    a2.set_xlabel("ms after the onset (bins deleted)")
    settle = (
        "not settled"
        if tr["settling_ms"] is None
        else f"{tr['settling_ms']:.0f} ms = {tr['settling_rtts']:.1f} RTTs"
    )
    a1.set_title(
        f"Transient (knee): {tr['transient_ms']:.0f} ms = {tr['transient_rtts']:.1f} RTTs; settling: {settle}\n"
        f"(RTT {tr['rtt_ms']} ms, epsilon {tr['epsilon']}, band +-{band:.0%})",
        fontsize=10,
    )
    _layout(fig, top_in=0.65, hspace=0.08)
    return fig


def _numeric(values: list[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _label(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._=-]", "_", name)


def sweep_slowdown_figure(curves: dict[Any, dict[Any, Any]], row_key: str, col_key: str | None) -> Any:
    """FCT study: p99 slowdown per flow-size bucket, one panel per value of
    `col_key` (e.g. the load), one line per value of `row_key` (e.g. the
    scheme); `curves[col][row]` is a `slowdown_by_size` table."""
    cols = list(curves)
    fig = Figure(figsize=(4.2 * max(len(cols), 1), 3.8))
    axes = fig.subplots(1, max(len(cols), 1), squeeze=False)[0]
    drawn = False
    for ax, c in zip(axes, cols, strict=False):
        lines = 0
        for r, b in curves[c].items():
            b = b.filter((b["finished"] > 0) & (b["slowdown_p99"] > 0))
            if not len(b):  # no flow of this point finished: nothing to draw on a log scale
                continue
            upper = np.minimum(b["upper_bytes"].fill_null(30_000_000).to_numpy(), 30_000_000)
            lower = np.maximum(b["lower_bytes"].to_numpy(), 1.0)
            ax.plot(np.sqrt(lower * upper), b["slowdown_p99"].to_numpy(), "o-", lw=1.3, label=f"{_label(r)}")
            lines += 1
        if lines:
            ax.set_xscale("log")
            ax.set_yscale("log")
            drawn = True
        else:
            ax.text(0.5, 0.5, "no flow finished", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("flow size (bytes, bucket)")
        ax.set_title(f"{col_key} = {_label(c)}" if col_key else "p99 slowdown")
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("p99 slowdown")
    if drawn:
        axes[0].legend(fontsize=8, title=row_key)
    fig.tight_layout()
    return fig


def sweep_figure(frame: Any, metric: str, key: str, grid: dict[str, list[Any]]) -> Any:
    """`metric` against grid key `key`: the mean over seeds with its 95%
    confidence band (Student t over seeds; none with one seed), one line per
    combination of the other swept keys (at most 8; more are pooled into one
    line)."""
    import polars as pl

    others = [k for k, v in grid.items() if k != key and len(v) > 1]
    combos = frame.select(others).unique(maintain_order=True).rows() if others else [()]
    pooled = len(combos) > 8
    if pooled:
        combos = [()]
        others = []
    xs = list(grid[key])
    numeric = _numeric(xs)
    fig = Figure(figsize=(7, 3.6))
    ax = fig.subplots()
    for combo in combos:
        sub = frame
        for k, v in zip(others, combo, strict=True):
            sub = sub.filter(pl.col(k) == v) if v is not None else sub.filter(pl.col(k).is_null())
        values = sub.group_by(key, maintain_order=True).agg(pl.col(metric))
        by = {r[key]: describe(r[metric], bounds=bounds(metric)) for r in values.iter_rows(named=True)}
        order = (
            sorted(by, key=float) if numeric else [x for x in xs if x in by] + [x for x in by if x not in xs]
        )
        pos = (
            [float(x) for x in order]
            if numeric
            else [xs.index(x) if x in xs else i for i, x in enumerate(order)]
        )
        mean = np.array([np.nan if by[x]["mean"] is None else by[x]["mean"] for x in order], dtype=float)
        # No band where there is no interval (fewer than 3 seeds).
        lo = np.array([_or_nan(by[x]["ci_low"]) for x in order], dtype=float)
        hi = np.array([_or_nan(by[x]["ci_high"]) for x in order], dtype=float)
        label = ", ".join(f"{k}={_label(v)}" for k, v in zip(others, combo, strict=True)) or None
        if numeric:
            (line,) = ax.plot(pos, mean, marker="o", ms=3, lw=1.2, label=label)
            ax.fill_between(pos, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        else:  # categories: a mean marker with a 95% CI bar, groups side by side
            shift = (combos.index(combo) - (len(combos) - 1) / 2) * 0.08
            err = np.nan_to_num(np.vstack([mean - lo, hi - mean]))  # no bar without an interval
            ax.errorbar(np.array(pos) + shift, mean, yerr=err, fmt="o", ms=4, capsize=3, label=label)
    if numeric:
        vals = [float(x) for x in xs]
        if min(vals) > 0 and max(vals) / min(vals) >= 50:
            ax.set_xscale("log")
    else:
        ax.set_xticks(range(len(xs)), [_label(x) for x in xs])
        ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.set_xlabel(key)
    ax.set_ylabel(metric)
    title = f"{metric} vs {key}: mean over seeds, 95% confidence band"
    ax.set_title(title + (" (other parameters pooled)" if pooled else ""), fontsize=9)
    ax.grid(alpha=0.3)
    if len(combos) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
