"""Plots (matplotlib, PNG) and the HTML report of a run."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .schemes import qeq_bytes  # noqa: E402

_SMOOTH_MS = 1.0  # throughput curves are averaged over 1 ms for legibility


def _series(res: Any, name: str, seed_index: int = 0) -> tuple[float, list[tuple[str, np.ndarray]]]:
    run = res.runs[seed_index]
    bin_ms = run.result["bin_ps"] / 1e9
    return bin_ms, [(k, v) for (s, k, v) in run.series if s == name]


def _smooth(v: np.ndarray, bin_ms: float) -> np.ndarray:
    n = max(1, round(_SMOOTH_MS / bin_ms))
    if n == 1 or len(v) < n:
        return v
    k = np.ones(n)
    # Normalise by the samples actually inside the window, so the edges do not sag.
    return np.convolve(v, k, mode="same") / np.convolve(np.ones(len(v)), k, mode="same")


def plot_series(res: Any, name: str) -> Any:
    fig, ax = plt.subplots(figsize=(9, 4.2))
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
    fig.tight_layout()
    return fig


def _throughput_fig(res: Any) -> Any:
    fig, ax = plt.subplots(figsize=(9, 4.2))
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
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("throughput (Gbit/s, 1 ms average)")
    ax.set_title(f"Throughput, seed {res.runs[0].seed}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    return fig


def _queue_fig(res: Any) -> Any | None:
    bin_ms, qs = _series(res, "queue_bytes")
    _, qmax = _series(res, "queue_bytes_max")
    if not qs:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.2))
    maxes = dict(qmax)
    for k, v in qs[:12]:
        t = np.arange(len(v)) * bin_ms
        (line,) = ax.plot(t, v / 1000, lw=1, label=f"{k} (bin end)")
        if k in maxes:
            ax.plot(t, maxes[k] / 1000, lw=0.6, alpha=0.5, color=line.get_color(), label=f"{k} (bin max)")
    sc = res.scenario
    q = qeq_bytes(sc.scheme, sc.table)
    if q:
        ax.axhline(q / 1000, ls="--", color="green", lw=1, label=f"Qeq {q / 1000:.1f} KB")
    trigger = sc.model.pause.trigger
    if trigger == "auto":
        trigger = "output_queue" if sc.model.bridge.buffer_mode in ("per_output", "infinite") else "other"
    if sc.pause and trigger == "output_queue":  # XOFF watches this very queue
        ax.axhline(sc.model.pause.xoff_bytes / 1000, ls=":", color="red", lw=1, label="XOFF")
    buffers = {
        b["name"]: b["buffer_bytes"]
        for b in sc.engine_config()["bridges"]
        if b["buffer_mode"] == "per_output"
    }
    sizes = {buffers[k.partition("->")[0]] for k, _ in qs[:12] if k.partition("->")[0] in buffers}
    if len(sizes) == 1:  # one buffer size for every plotted port: draw it
        size = sizes.pop()
        ax.axhline(size / 1000, ls="-.", color="grey", lw=1, label=f"buffer {size / 1000:g} KB")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("queue (KB)")
    ax.set_title(f"CP queue, seed {res.runs[0].seed}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def _rl_fig(res: Any) -> Any | None:
    bin_ms, rates = _series(res, "rl_rate")
    if not rates:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for k, v in rates[:16]:
        ax.plot(np.arange(len(v)) * bin_ms, v, lw=1, label=k)
    fair = res.scenario.model.fairness
    if fair is not None:
        ax.axhline(fair.target_gbps, ls="--", color="grey", lw=1, label="fair share")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("rate-limiter rate (Gbit/s, at bin end)")
    ax.set_title(f"Reaction points, seed {res.runs[0].seed}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def _paused_fig(res: Any) -> Any | None:
    bin_ms, ps = _series(res, "paused_fraction")
    if not ps:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for k, v in ps[:16]:
        ax.plot(np.arange(len(v)) * bin_ms, _smooth(v, bin_ms), lw=1, label=k)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("fraction of time paused (1 ms average)")
    ax.set_title(f"PAUSE, seed {res.runs[0].seed}")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def _fairness_fig(res: Any) -> Any | None:
    if "jain" not in res.metrics or len(res.runs) < 2:
        return None
    fig, ax = plt.subplots(figsize=(9, 3.4))
    jain = res.metric("jain")
    ax.bar([str(s) for s in res.seeds], jain, color="steelblue")
    ax.set_ylim(min(0.8, min(jain) - 0.02), 1.0)
    ax.set_xlabel("seed")
    ax.set_ylabel("Jain's index")
    ax.set_title("Fairness per seed")
    fig.tight_layout()
    return fig


def _fmt(v: Any) -> str:
    if v is None:
        return "&ndash;"
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v))


def _transient_fig(res: Any) -> Any | None:
    tr = res.transient()
    if tr is None:
        return None
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
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
    fig.tight_layout()
    return fig


def _pause_table(res: Any) -> str:
    """Per-link PAUSE of the first seed: every link direction paused at least once."""
    links = [lk for lk in res.runs[0].result["links"] if lk["paused_ever"] or lk["pause_frames"]]
    if not links:
        return ""
    links.sort(key=lambda lk: (-lk["time_paused_pct"], lk["name"]))
    rows = "".join(
        f"<tr><td>{html.escape(lk['name'])}</td><td>{lk['time_paused_pct']:.2f}</td>"
        f"<td>{lk['pause_frames']:,}</td><td>{lk['throughput_gbps'][0]:.3f}</td></tr>"
        for lk in links[:64]
    )
    more = f"<p>{len(links) - 64} more in links.parquet.</p>" if len(links) > 64 else ""
    return (
        f"<h2>PAUSE per link (seed {res.runs[0].seed})</h2>"
        "<table><tr><th>link (sender->receiver)</th><th>time paused (%)</th>"
        "<th>PAUSE frames it sent</th><th>throughput (Gbit/s)</th></tr>"
        f"{rows}</table>{more}"
    )


def write_report(res: Any, out: Path) -> Path:
    figs = {
        "throughput.png": _throughput_fig(res),
        "queue.png": _queue_fig(res),
        "rl_rate.png": _rl_fig(res),
        "paused.png": _paused_fig(res),
        "fairness.png": _fairness_fig(res),
        "transient.png": _transient_fig(res),
    }
    images = []
    for name, fig in figs.items():
        if fig is None:
            continue
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        images.append(name)
    sc = res.scenario
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{_fmt(v['mean'])}</td><td>{_fmt(v['min'])}</td>"
        f"<td>{_fmt(v['max'])}</td></tr>"
        for k, v in res.metrics.items()
    )
    eng = res.engine()
    body = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>cnsim: {html.escape(sc.name)}</title>
<style>
body {{ font-family: sans-serif; max-width: 1000px; margin: 2em auto; color: #222; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
td:first-child {{ text-align: left; }} img {{ max-width: 100%; }}
pre {{ background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 80%; }}
</style></head><body>
<h1>{html.escape(sc.name)}: {html.escape(sc.scheme)}{" with PAUSE" if sc.pause else ""}</h1>
<p>{html.escape(sc.model.description)}</p>
<p>Seeds: {", ".join(str(s) for s in res.seeds)}. Engine: {eng["events"]:,} events,
{eng["frames"]:,} frames, {eng["wall_s"]:.2f} s of engine time
({(eng["frames_delivered_per_s"] or 0) / 1e6:.2f} M delivered frames per second), cnsim {eng["version"]}.</p>
<h2>Summary over seeds</h2>
<table><tr><th>metric</th><th>mean</th><th>min</th><th>max</th></tr>{rows}</table>
{_pause_table(res)}
{"".join(f'<h2>{html.escape(i[:-4])}</h2><img src="{i}" alt="{i}">' for i in images)}
<h2>Scenario (resolved, re-runnable)</h2>
<pre>{html.escape(sc.to_toml())}</pre>
</body></html>
"""
    path = out / "report.html"
    path.write_text(body)
    return path


# ------------------------------------------------- a run's report from its files


class _SavedRun:
    def __init__(self, seed: int, result: dict[str, Any], series: list[tuple[str, str, np.ndarray]]) -> None:
        self.seed = seed
        self.result = result
        self.series = series


def _saved_rows(out: Path, name: str, seed: int) -> list[dict[str, Any]]:
    """Rows of DIR/NAME.parquet for one seed as the engine's result entries
    (the `throughput_gbps_<window>` columns back into one list)."""
    import polars as pl

    path = out / f"{name}.parquet"
    if not path.is_file():
        return []
    df = pl.read_parquet(path)
    if "seed" not in df.columns:
        return []
    rows = []
    for r in df.filter(pl.col("seed") == seed).iter_rows(named=True):
        tp = [v for k, v in r.items() if k.startswith("throughput_gbps_")]
        row = {k: v for k, v in r.items() if k != "seed" and not k.startswith("throughput_gbps_")}
        if tp:
            row["throughput_gbps"] = tp
        rows.append(row)
    return rows


class _SavedResults:
    """What write_report needs of a Results, read back from a results
    directory (scenario.toml, summary.json, timeseries.parquet)."""

    def __init__(self, out: Path) -> None:
        import json

        import polars as pl

        from .scenario import load

        self.scenario = load(out / "scenario.toml")
        self._summary = json.loads((out / "summary.json").read_text())
        self.metrics = self._summary["metrics"]
        ts = pl.read_parquet(out / "timeseries.parquet")
        bin_ps = round(self.scenario.model.bin_us * 1e6)
        self.runs = []
        for seed in self._summary["seeds"]:
            part = ts.filter(pl.col("seed") == seed)
            series = [
                (g["series"][0], g["key"][0], g["value"].to_numpy())
                for g in part.partition_by(["series", "key"], maintain_order=True)
            ]
            result = {
                "seed": seed,
                "bin_ps": bin_ps,
                "flows": _saved_rows(out, "flows", seed),
                "links": _saved_rows(out, "links", seed),
                "nodes": _saved_rows(out, "nodes", seed),
            }
            self.runs.append(_SavedRun(seed, result, series))

    @property
    def seeds(self) -> list[int]:
        return list(self._summary["seeds"])

    def metric(self, name: str) -> list[Any]:
        return list(self.metrics[name]["per_seed"])

    def engine(self) -> dict[str, Any]:
        return self._summary["engine"]

    def aggregates(self) -> dict[str, Any]:
        return self._summary.get("aggregates") or {}

    def summary_dict(self) -> dict[str, Any]:
        return self._summary

    def transient(self) -> None:
        return None  # its knee is not kept on disk: transient.png is left as it is


def rebuild_report(out: Path) -> Path:
    """Writes report.html and its plots again from a results directory's files."""
    need = [n for n in ("scenario.toml", "summary.json", "timeseries.parquet") if not (out / n).is_file()]
    if need:
        from .errors import ScenarioError

        raise ScenarioError(
            f"report: {out} is neither a sweep (no sweep.json) nor a run's results (no {', '.join(need)})"
        )
    return write_report(_SavedResults(out), out)


# ------------------------------------------------------------ a sweep's report


def _numeric(values: list[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _label(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._=-]", "_", name)


def _sweep_fig(frame: Any, metric: str, key: str, grid: dict[str, list[Any]]) -> Any:
    """`metric` against grid key `key`: the mean over seeds with the min-max
    band, one line per combination of the other swept keys (at most 8; more
    are pooled into one line)."""
    import polars as pl

    others = [k for k, v in grid.items() if k != key and len(v) > 1]
    combos = frame.select(others).unique(maintain_order=True).rows() if others else [()]
    pooled = len(combos) > 8
    if pooled:
        combos = [()]
        others = []
    xs = list(grid[key])
    numeric = _numeric(xs)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for combo in combos:
        sub = frame
        for k, v in zip(others, combo, strict=True):
            sub = sub.filter(pl.col(k) == v) if v is not None else sub.filter(pl.col(k).is_null())
        agg = sub.group_by(key, maintain_order=True).agg(
            pl.col(metric).mean().alias("mean"),
            pl.col(metric).min().alias("min"),
            pl.col(metric).max().alias("max"),
        )
        by = {r[key]: r for r in agg.iter_rows(named=True)}
        order = (
            sorted(by, key=float) if numeric else [x for x in xs if x in by] + [x for x in by if x not in xs]
        )
        pos = (
            [float(x) for x in order]
            if numeric
            else [xs.index(x) if x in xs else i for i, x in enumerate(order)]
        )
        mean = np.array([np.nan if by[x]["mean"] is None else by[x]["mean"] for x in order], dtype=float)
        lo = np.array([np.nan if by[x]["min"] is None else by[x]["min"] for x in order], dtype=float)
        hi = np.array([np.nan if by[x]["max"] is None else by[x]["max"] for x in order], dtype=float)
        label = ", ".join(f"{k}={_label(v)}" for k, v in zip(others, combo, strict=True)) or None
        if numeric:
            (line,) = ax.plot(pos, mean, marker="o", ms=3, lw=1.2, label=label)
            ax.fill_between(pos, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        else:  # categories: a mean marker with a min-max bar, groups side by side
            shift = (combos.index(combo) - (len(combos) - 1) / 2) * 0.08
            err = np.vstack([mean - lo, hi - mean])
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
    title = f"{metric} vs {key}: mean over seeds, min-max band"
    ax.set_title(title + (" (other parameters pooled)" if pooled else ""), fontsize=9)
    ax.grid(alpha=0.3)
    if len(combos) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _constant_note(frame: Any, constant: list[str]) -> str:
    if not constant or not len(frame):
        return ""
    items = ", ".join(f"{html.escape(m)} = {_fmt(frame[m].drop_nulls()[0])}" for m in constant)
    return f"<p>The same at every point and seed (not plotted): {items}.</p>"


def write_sweep_report(out: Path, meta: dict[str, Any], frame: Any) -> Path:
    """DIR/report.html of a sweep: every metric against every swept parameter,
    and a table of the points (mean over seeds)."""
    import polars as pl

    out = Path(out)
    grid: dict[str, list[Any]] = meta.get("grid") or {}
    keys = list(grid)
    swept = [k for k, v in grid.items() if len(v) > 1] or keys
    metrics = [c for c in frame.columns if c not in ("point", "seed", *keys)]
    metrics = [m for m in metrics if frame[m].dtype.is_numeric() and frame[m].null_count() < len(frame)]
    # A metric with one value over the whole sweep has nothing to plot: it is listed instead.
    constant = [m for m in metrics if frame[m].drop_nulls().n_unique() <= 1]
    plotted = [m for m in metrics if m not in constant]
    for old in out.glob("sweep-*.png"):
        old.unlink()
    images = []
    if len(frame):
        for m in plotted:
            for k in swept:
                fig = _sweep_fig(frame, m, k, grid)
                name = f"sweep-{_safe(m)}-vs-{_safe(k)}.png"
                fig.savefig(out / name, dpi=90)
                plt.close(fig)
                images.append((m, k, name))
    points = meta.get("points") or []
    done = frame["point"].unique(maintain_order=True).to_list() if len(frame) else []
    means = (
        frame.group_by("point", maintain_order=True).agg([pl.col(m).mean() for m in metrics])
        if len(frame)
        else None
    )
    by_point = {r["point"]: r for r in means.iter_rows(named=True)} if means is not None else {}
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys) + "".join(
        f"<th>{html.escape(m)}</th>" for m in metrics
    )
    body_rows = []
    for p in points:
        pid = p["id"]
        link = (
            f'<a href="{html.escape(pid)}/report.html">{html.escape(pid)}</a>'
            if (out / pid / "report.html").is_file()
            else html.escape(pid)
        )
        cells = "".join(f"<td>{_fmt(p['values'].get(k))}</td>" for k in keys)
        r = by_point.get(pid)
        cells += "".join(f"<td>{_fmt(r[m]) if r else '&ndash;'}</td>" for m in metrics)
        body_rows.append(f"<tr><td>{link}{'' if r else ' (not run)'}</td>{cells}</tr>")
    grid_rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(', '.join(_label(v) for v in vals))}</td></tr>"
        for k, vals in grid.items()
    )
    figs = "".join(
        f'<h3>{html.escape(m)} vs {html.escape(k)}</h3><img src="{n}" alt="{html.escape(n)}">'
        for m, k, n in images
    )
    name = html.escape(str(meta.get("scenario", "")))
    body = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>cnsim sweep: {name}</title>
<style>
body {{ font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
td:first-child {{ text-align: left; }} img {{ max-width: 100%; }}
.wide {{ overflow-x: auto; }}
pre {{ background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 80%; }}
</style></head><body>
<h1>Sweep of {name}</h1>
<p>{len(done)} of {len(points)} points finished, seeds {", ".join(str(s) for s in meta.get("seeds") or [])};
each point's own report is linked from the table. cnsim {html.escape(str(meta.get("cnsim_version", "")))}.</p>
<h2>Grid</h2>
<table><tr><th>parameter</th><th>values</th></tr>{grid_rows}</table>
<h2>Points (mean over seeds)</h2>
<div class="wide"><table><tr><th>point</th>{head}</tr>{"".join(body_rows)}</table></div>
<h2>Metrics against the swept parameters</h2>
{figs or "<p>No finished point yet.</p>"}
{_constant_note(frame, constant)}
<h2>Base scenario (resolved)</h2>
<pre>{html.escape(str(meta.get("scenario_toml", "")))}</pre>
</body></html>
"""
    path = out / "report.html"
    tmp = out / ".report.html.tmp"
    tmp.write_text(body)
    tmp.replace(path)
    return path
