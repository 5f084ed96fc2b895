"""HTML from the one jinja2 template (templates/report.html.j2, CSS in
templates/report.css): a run's report, a sweep's report, and the notebook
views of Results and SweepResults."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

TEMPLATE = "report.html.j2"


def _num(v: Any) -> str:
    if v is None:
        return "\u2013"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if v != v:  # NaN
            return "\u2013"
        return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _ci(stats: dict[str, Any]) -> str:
    from ..metrics import ci_text

    return ci_text(stats, _num)


@cache
def _env() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=PackageLoader("cnsim.report", "templates"),
        autoescape=select_autoescape(["html", "j2"], default=True),
        undefined=StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters["num"] = _num
    env.filters["ci"] = _ci
    return env


def render(**context: Any) -> str:
    return _env().get_template(TEMPLATE).render(**context)


def _aggregates(res: Any) -> dict[str, Any]:
    return {k: v for k, v in res.aggregates().items() if v is not None}


def run_html(res: Any, images: list[str]) -> str:
    """A run's report.html."""
    import polars as pl

    sc = res.scenario
    links = res.links
    first = res.seeds[0]
    measure = res.runs[0].window_names[0]
    paused = (
        links.filter((pl.col("seed") == first) & (pl.col("paused_ever") | (pl.col("pause_frames") > 0)))
        .sort(["time_paused_pct", "name"], descending=[True, False])
        .select(
            "name",
            "time_paused_pct",
            "pause_frames",
            pl.col(f"throughput_gbps_{measure}").alias("throughput"),
        )
    )
    return render(
        kind="run",
        name=sc.name,
        scheme=sc.scheme,
        pause=sc.pause,
        description=sc.model.description,
        seeds=res.seeds,
        engine=res.engine(),
        metrics=res.stats,
        aggregates=_aggregates(res),
        paused_links=paused.head(64).to_dicts(),
        more_links=max(0, len(paused) - 64),
        first_seed=first,
        images=images,
        toml=sc.to_toml(),
    )


def sweep_html(
    meta: dict[str, Any],
    frame: Any,
    out: Path,
    images: list[dict[str, str]],
    constant: list[Any],
    fct: dict[str, Any] | None = None,
) -> str:
    """A sweep's report.html."""
    import polars as pl

    grid: dict[str, list[Any]] = meta.get("grid") or {}
    keys = list(grid)
    metrics = [c for c in frame.columns if c not in ("point", "seed", *keys)]
    metrics = [m for m in metrics if frame[m].dtype.is_numeric() and frame[m].null_count() < len(frame)]
    means = (
        frame.group_by("point", maintain_order=True).agg([pl.col(m).mean() for m in metrics])
        if len(frame)
        else None
    )
    by_point = {r["point"]: r for r in means.iter_rows(named=True)} if means is not None else {}
    points = []
    for p in meta.get("points") or []:
        r = by_point.get(p["id"])
        points.append(
            {
                "id": p["id"],
                "linked": (out / p["id"] / "report.html").is_file(),
                "ran": r is not None,
                "grid_values": [p["values"].get(k) for k in keys],
                "metric_values": [r[m] if r else None for m in metrics],
            }
        )
    done = frame["point"].n_unique() if len(frame) else 0
    return render(
        kind="sweep",
        name=str(meta.get("scenario", "")),
        done=done,
        total=len(points),
        seeds=meta.get("seeds") or [],
        version=str(meta.get("cnsim_version", "")),
        grid={k: [_num(v) for v in vals] for k, vals in grid.items()},
        keys=keys,
        point_metrics=metrics,
        points=points,
        images=images,
        constant=constant,
        fct=fct,
        toml=str(meta.get("scenario_toml", "")),
    )


def results_html(res: Any) -> str:
    """The notebook view of a Results (xarray's style: a compact summary
    with collapsible sections)."""
    sc = res.scenario
    tables = []
    for name in ("summary", "flows", "links", "nodes", "windows"):
        df = res.to_polars(name)
        tables.append(
            {"name": name, "rows": len(df), "columns": df.columns[:12] + (["..."] if df.width > 12 else [])}
        )
    return render(
        kind="results_repr",
        name=sc.name,
        scheme=sc.scheme,
        pause=sc.pause,
        description=sc.model.description,
        seeds=res.seeds,
        metrics=res.stats,
        aggregates=_aggregates(res),
        tables=tables,
        toml=sc.to_toml(comments=False),
    )


def sweep_results_html(sr: Any) -> str:
    """The notebook view of a SweepResults."""
    frame = sr.frame
    return render(
        kind="sweep_repr",
        name=str(sr.meta.get("scenario", "")),
        done=frame["point"].n_unique() if len(frame) else 0,
        total=len(sr.points),
        grid={k: [_num(v) for v in vals] for k, vals in sr.grid.items()},
        rows=len(frame),
        columns=frame.columns,
    )
