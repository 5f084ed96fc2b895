"""The rows `cnsim validate` prints (cnsim.validate): a published figure
against cnsim's, its tolerance, and the helpers every study builds them
with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .executor import Unit, run_units
from .results import Results
from .scenario import Scenario


@dataclass
class Row:
    study: str
    figure: str
    published: float | str
    ours: float | None
    tolerance: str
    ok: bool
    #: For a figure out of tolerance whose disagreement is explained in
    #: docs/calibration.md: the name of that explanation.
    known: str = ""
    #: For a mean over seeds: cnsim's 95% confidence interval, and whether
    #: the published figure lies inside it (None: not a mean over seeds).
    ci: tuple[float, float] | None = None

    @property
    def in_ci(self) -> bool | None:
        if self.ci is None or not isinstance(self.published, int | float):
            return None
        return self.ci[0] <= self.published <= self.ci[1]

    def as_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "figure": self.figure,
            "published": self.published,
            "cnsim": self.ours,
            "tolerance": self.tolerance,
            "within": self.ok,
            "known_disagreement": self.known or None,
            "ci95": list(self.ci) if self.ci is not None else None,
            "published_in_ci95": self.in_ci,
        }


def _with_ci(row: Row, stats: dict[str, Any]) -> Row:
    """Attaches the 95% confidence interval of a metric's mean over seeds."""
    if stats.get("ci_low") is not None:
        row.ci = (stats["ci_low"], stats["ci_high"])
    return row


def run_many(
    scenarios: dict[Any, Scenario], description: str, jobs: int | None, progress: bool
) -> dict[Any, Results]:
    """Every seed of every scenario as one batch on the executor, under one
    progress bar; the Results by key."""
    units = [
        Unit(sc.compiled(), seed, sc.duration_ms, tag=key)
        for key, sc in scenarios.items()
        for seed in sorted(sc.seeds)
    ]
    runs = run_units(units, description=description, item="runs", jobs=jobs, progress=progress)
    by: dict[Any, list[Any]] = {k: [] for k in scenarios}
    for u, r in zip(units, runs, strict=True):
        by[u.tag].append(r)
    return {k: Results(scenarios[k], by[k]) for k in scenarios}


def _means(got: dict[Any, Results]) -> dict[Any, dict[str, Any]]:
    """Each run's metrics, by key: the mean over its seeds."""
    return {k: {m: v["mean"] for m, v in res.stats.items()} for k, res in got.items()}


def _rel(study: str, figure: str, pub: float, ours: float | None, tol: float) -> Row:
    ok = ours is not None and abs(ours - pub) <= tol * abs(pub)
    return Row(study, figure, pub, ours, f"+-{tol:.0%}", ok)


def _abs(study: str, figure: str, pub: float, ours: float | None, tol: float) -> Row:
    ok = ours is not None and abs(ours - pub) <= tol
    return Row(study, figure, pub, ours, f"+-{tol:g}", ok)
