"""Reports: a run's plots and report.html, a sweep's, and the same again
from a saved results directory (cnsim.reopen). Figures are matplotlib `Figure` objects
(report.figures, no pyplot); HTML comes from one jinja2 template
(report.html)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..outdir import atomic_write
from . import collective_figures, figures
from .html import run_html, sweep_html

__all__ = ["write_report", "write_sweep_report"]

#: A run's figures: file name -> the function that draws it (None: not applicable).
RUN_FIGURES = {
    "throughput.png": figures.throughput_fig,
    "queue.png": figures.queue_fig,
    "rl_rate.png": figures.rl_fig,
    "rl_window.png": figures.window_fig,
    "paused.png": figures.paused_fig,
    "classes.png": figures.classes_fig,
    "fairness.png": figures.fairness_fig,
    "transient.png": figures.transient_fig,
    "slowdown.png": figures.slowdown_fig,
    "queue_cdf.png": figures.queue_cdf_fig,
    "collectives_busbw.png": collective_figures.busbw_fig,
    "collectives_step_time.png": collective_figures.step_time_fig,
    "collectives_ranks.png": collective_figures.rank_timeline_fig,
}


def write_report(res: Any, out: Path) -> Path:
    """The plots of `res` (PNG) and its report.html, into `out`."""
    out = Path(out)
    images = []
    for name, draw in RUN_FIGURES.items():
        fig = draw(res)
        if fig is None:
            (out / name).unlink(missing_ok=True)
            continue
        _save(fig, out / name, 110)
        images.append(name)
    path = out / "report.html"
    atomic_write(path, run_html(res, images))
    return path


def write_sweep_report(out: Path, meta: dict[str, Any], frame: Any) -> Path:
    """DIR/report.html of a sweep: every metric against every swept
    parameter (mean over seeds with a 95% confidence band), and a table of
    the points (mean over seeds)."""
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
                fig = figures.sweep_figure(frame, m, k, grid)
                name = f"sweep-{figures._safe(m)}-vs-{figures._safe(k)}.png"
                _save(fig, out / name, 90)
                images.append({"metric": m, "key": k, "file": name})
    const_values = [(m, frame[m].drop_nulls()[0]) for m in constant] if len(frame) else []
    fct = _fct_study(out, meta, frame)
    path = out / "report.html"
    atomic_write(path, sweep_html(meta, frame, out, images, const_values, fct))
    return path


def _fct_study(out: Path, meta: dict[str, Any], frame: Any) -> dict[str, Any] | None:
    """With transport flows: the table of p99 slowdown of flows under 100 KB
    (scheme by the other swept parameter, mean over seeds) and the figure of
    p99 slowdown per size bucket, from each point's flows.parquet."""
    import polars as pl

    from ..metrics import slowdown_by_size

    if not len(frame) or "slowdown_p99_under_100kb" not in frame.columns:
        return None
    grid: dict[str, list[Any]] = meta.get("grid") or {}
    keys = list(grid)
    row_key = "scheme" if "scheme" in grid else keys[0] if keys else None
    others = [k for k in keys if k != row_key and len(grid[k]) > 1]
    col_key = others[0] if others else None
    if row_key is None:
        return None
    means = frame.group_by([k for k in (row_key, col_key) if k], maintain_order=True).agg(
        pl.col("slowdown_p99_under_100kb").mean()
    )
    cols = grid[col_key] if col_key else [None]
    rows = []
    for r in grid[row_key]:
        vals = []
        for c in cols:
            sel = means.filter(pl.col(row_key) == r)
            if col_key:
                sel = sel.filter(pl.col(col_key) == c)
            vals.append(sel["slowdown_p99_under_100kb"][0] if len(sel) else None)
        rows.append({"value": r, "cells": vals})
    curves: dict[Any, dict[Any, Any]] = {}
    for p in meta.get("points") or []:
        f = out / p["id"] / "flows.parquet"
        if not f.is_file():
            continue
        values = p["values"]
        c = values.get(col_key) if col_key else None
        curves.setdefault(c, {})[values.get(row_key)] = slowdown_by_size(pl.read_parquet(f))
    image = None
    if curves:
        fig = figures.sweep_slowdown_figure(curves, row_key, col_key)
        image = "sweep-slowdown-by-size.png"
        _save(fig, out / image, 90)
    return {"row_key": row_key, "col_key": col_key, "cols": cols, "rows": rows, "image": image}


def _save(fig: Any, path: Path, dpi: int) -> None:
    """A figure as PNG, whole or not at all (an error names the file)."""
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format="png"))
