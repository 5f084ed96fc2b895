"""Results of a set of replications: per-seed metrics, statistics over
seeds, time series, and the on-disk layout of interface.md."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from . import _core
from .metrics import per_seed, summarize
from .runner import SeedRun
from .scenario import Scenario

#: Engine fields that depend on the machine, not on (scenario, seed).
WALL_CLOCK_FIELDS = ("wall_s", "events_per_s", "frames_delivered_per_s", "sim_speed")


class Results:
    """What `cnsim.run` returns."""

    def __init__(self, scenario: Scenario, runs: list[SeedRun]) -> None:
        self.scenario = scenario
        self.runs = runs
        self.per_seed = [per_seed(r.result, scenario, r.series) for r in runs]
        self.metrics = summarize(self.per_seed)

    @property
    def seeds(self) -> list[int]:
        return [r.seed for r in self.runs]

    @property
    def summary(self) -> pl.DataFrame:
        """One row per seed, one column per scalar metric."""
        rows = [{"seed": r.seed, **m} for r, m in zip(self.runs, self.per_seed, strict=True)]
        return pl.DataFrame(rows, infer_schema_length=None)

    def metric(self, name: str) -> list[Any]:
        """Per-seed values of metric `name`."""
        if name not in self.metrics:
            raise KeyError(f"no metric '{name}'; metrics: {', '.join(self.metrics)}")
        return list(self.metrics[name]["per_seed"])

    def engine(self) -> dict[str, Any]:
        """Engine figures summed over seeds (wall time is the sum of the runs)."""
        ev = sum(r.result["engine"]["events"] for r in self.runs)
        wall = sum(r.result["engine"]["wall_s"] for r in self.runs)
        frames = sum(r.result["frames"]["generated"] for r in self.runs)
        delivered = sum(r.result["frames"]["delivered"] for r in self.runs)
        return {
            "events": ev,
            "frames": frames,
            "frames_delivered": delivered,
            "wall_s": wall,
            "events_per_s": ev / wall if wall > 0 else None,
            "frames_delivered_per_s": delivered / wall if wall > 0 else None,
            "version": _core.version(),
        }

    def timeseries(self, series: str | None = None, seed: int | None = None) -> pl.DataFrame:
        """Long format: seed, time_ms, series, key, value (bins' start times)."""
        frames = []
        for r in self.runs:
            if seed is not None and r.seed != seed:
                continue
            bin_ms = r.result["bin_ps"] / 1e9
            for s, k, v in r.series:
                if series is not None and s != series:
                    continue
                n = len(v)
                frames.append(
                    pl.DataFrame(
                        {
                            "seed": np.full(n, r.seed, dtype=np.int64),
                            "time_ms": np.arange(n, dtype=np.float64) * bin_ms,
                            "series": [s] * n,
                            "key": [k] * n,
                            "value": v,
                        }
                    )
                )
        if not frames:
            return pl.DataFrame(
                schema={
                    "seed": pl.Int64,
                    "time_ms": pl.Float64,
                    "series": pl.Utf8,
                    "key": pl.Utf8,
                    "value": pl.Float64,
                }
            )
        return pl.concat(frames)

    def flows(self) -> pl.DataFrame:
        rows = []
        for r in self.runs:
            names = [w["name"] for w in r.result["windows"]]
            for f in r.result["flows"]:
                row = {
                    "seed": r.seed,
                    "src": f["src"],
                    "dst": f["dst"],
                    "generated": f["generated"],
                    "delivered": f["delivered"],
                }
                row.update(
                    {f"throughput_gbps_{n}": v for n, v in zip(names, f["throughput_gbps"], strict=True)}
                )
                rows.append(row)
        return pl.DataFrame(rows, infer_schema_length=None)

    def links(self) -> pl.DataFrame:
        rows = []
        for r in self.runs:
            names = [w["name"] for w in r.result["windows"]]
            for li in r.result["links"]:
                row = {k: v for k, v in li.items() if k != "throughput_gbps"}
                row["seed"] = r.seed
                row.update(
                    {f"throughput_gbps_{n}": v for n, v in zip(names, li["throughput_gbps"], strict=True)}
                )
                rows.append(row)
        return pl.DataFrame(rows, infer_schema_length=None)

    def nodes(self) -> pl.DataFrame:
        """Per node and seed: frames generated, delivered, dropped_cp, dropped_rp."""
        return pl.DataFrame(
            [{"seed": r.seed, **n} for r in self.runs for n in r.result["nodes"]], infer_schema_length=None
        )

    def plot(self, name: str) -> Any:
        """A matplotlib Figure of series `name` (first seed)."""
        from .report import plot_series

        return plot_series(self, name)

    def transient(self) -> dict[str, Any] | None:
        """Transient duration over the replications (metrics.md), with its rc(l) curve."""
        if not hasattr(self, "_transient"):
            from .metrics import transient

            self._transient = transient(self)
        return self._transient

    def aggregates(self) -> dict[str, Any]:
        """Metrics computed across seeds (null where they do not exist)."""
        out: dict[str, Any] = {}
        tr = self.transient()
        if self.scenario.model.transient is not None:
            for k in ("transient_ms", "transient_rtts", "settling_ms", "settling_rtts"):
                out[k] = tr[k] if tr else None
            out["transient_rtt_ms"] = self.scenario.model.transient.rtt_ms
        return _clean(out)

    def summary_dict(self) -> dict[str, Any]:
        sc = self.scenario
        return {
            "scenario": sc.name,
            "scheme": sc.scheme,
            "pause": sc.pause,
            "seeds": self.seeds,
            "metrics": _clean(self.metrics),
            "aggregates": self.aggregates(),
            "frames": {
                k: sum(r.result["frames"][k] for r in self.runs)
                for k in (
                    "generated",
                    "delivered",
                    "dropped_cp",
                    "dropped_rp",
                    "dropped_rl",
                    "dropped_nic",
                    "deferred",
                    "in_flight",
                )
            },
            "engine": _clean(self.engine()),
        }

    def save(self, out: str | Path, *, report: bool = True) -> Path:
        """Writes the results layout of interface.md into `out`."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        _atomic_write(out / "scenario.toml", self.scenario.to_toml())
        _atomic_write(out / "summary.json", json.dumps(self.summary_dict(), indent=2) + "\n")
        self.flows().write_parquet(out / "flows.parquet")
        self.links().write_parquet(out / "links.parquet")
        self.nodes().write_parquet(out / "nodes.parquet")
        self.timeseries().write_parquet(out / "timeseries.parquet")
        tr = self.transient()
        if tr is not None:
            n = len(tr["rc"])
            pl.DataFrame(
                {
                    "deleted_bins": np.arange(n, dtype=np.int64),
                    "time_ms": np.arange(n, dtype=np.float64) * tr["bin_ms"],
                    "rc": np.asarray(tr["rc"], dtype=np.float64),
                    "mean_aggregate_gbps": np.asarray(tr["mean_series"], dtype=np.float64),
                    "smoothed_aggregate_gbps": np.asarray(tr["smoothed_series"], dtype=np.float64),
                }
            ).write_parquet(out / "transient.parquet")
        if report:
            from .report import write_report

            write_report(self, out)
        return out


def _clean(x: Any) -> Any:
    """JSON-safe: NaN and infinities become null."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # like any new file, not mkstemp's 0600
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
