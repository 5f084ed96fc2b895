"""`cnsim validate`: published figures (references.md) against this
simulator, side by side, each with its tolerance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .runner import run
from .scenario import load


@dataclass
class Row:
    study: str
    figure: str
    published: float | str
    ours: float | None
    tolerance: str
    ok: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "figure": self.figure,
            "published": self.published,
            "cnsim": self.ours,
            "tolerance": self.tolerance,
            "within": self.ok,
        }


def _rel(study: str, figure: str, pub: float, ours: float | None, tol: float) -> Row:
    ok = ours is not None and abs(ours - pub) <= tol * abs(pub)
    return Row(study, figure, pub, ours, f"+-{tol:.0%}", ok)


def _abs(study: str, figure: str, pub: float, ours: float | None, tol: float) -> Row:
    ok = ours is not None and abs(ours - pub) <= tol
    return Row(study, figure, pub, ours, f"+-{tol:g}", ok)


def baseline(jobs: int | None, progress: bool) -> list[Row]:
    """Reference 1: baseline, BCN, 25 seeds (Cisco)."""
    res = run(load("baseline", scheme="bcn"), jobs=jobs, progress=progress)
    m = res.metrics
    s = "baseline"
    rows = [
        _abs(s, "jain, mean over 25 seeds", 0.977, m["jain"]["mean"], 0.02),
        _rel(s, "dev_max, mean over 25 seeds", 0.216, m["dev_max"]["mean"], 0.5),
        _rel(s, "dev_rms, mean over 25 seeds", 0.144, m["dev_rms"]["mean"], 0.5),
    ]
    util = m["link_utilization"]["min"]
    rows.append(
        Row(
            s,
            "downlink utilisation 10-80 ms, min over seeds",
            ">= 0.99",
            util,
            ">= 0.99",
            util is not None and util >= 0.99,
        )
    )
    return rows


def calibration(jobs: int | None, progress: bool) -> list[Row]:
    """Reference 2: calibration run of a second simulator, BCN, one run."""
    res = run(load("calibration", scheme="bcn", seeds=[0]), jobs=jobs, progress=progress)
    r = res.runs[0].result
    w = r["windows"][0]  # measure window 5-95 ms
    s = "calibration"
    return [
        _rel(s, "frames generated 5-95 ms", 149674, w["generated"], 0.02),
        _rel(s, "frames received at the sink 5-95 ms", 74202, w["delivered"], 0.02),
        _rel(s, "frames dropped at RPs (total)", 75031, r["frames"]["dropped_rp"], 0.02),
        _abs(s, "frames dropped at the CP", 0, r["frames"]["dropped_cp"], 0),
    ]


STUDIES: dict[str, Callable[[int | None, bool], list[Row]]] = {
    "baseline": baseline,
    "calibration": calibration,
}
