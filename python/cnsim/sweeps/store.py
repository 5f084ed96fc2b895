"""A sweep directory on disk: sweep.json, one results directory per point
(written to a temporary sibling and renamed, so it is complete or absent),
sweep.parquet, the lock against a second sweep, resuming and refusing a
changed sweep, and reading it back (`load_sweep`, `SweepResults`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import polars as pl

from ..engine import SeedRun
from ..errors import ScenarioError
from ..outdir import DirLock, atomic_write, lock
from ..results import Results
from ..saved import read_results
from ..scenario import Scenario
from .grid import Point, _literal

#: Files of the sweep directory itself (beside the point directories).
SWEEP_JSON = "sweep.json"
SWEEP_PARQUET = "sweep.parquet"
POINT_JSON = "point.json"
_LOCK = ".sweep.lock"
_TMP_PREFIX = ".tmp-"
_FORMAT = 1

# ------------------------------------------------------------- directory


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x))


def _meta(base: Scenario, points: list[Point], grid: dict[str, list[Any]]) -> dict[str, Any]:
    import tomli_w

    from .._version import cnsim_version

    raw = base.resolved_raw()
    raw.pop("seeds", None)  # recorded on their own
    toml = tomli_w.dumps(raw)
    return {
        "cnsim_sweep": _FORMAT,
        "scenario": base.name,
        "scenario_sha256": hashlib.sha256(toml.encode()).hexdigest(),
        "grid": _jsonable(grid),
        "seeds": list(base.seeds),
        "points": [{"id": p.id, "values": _jsonable(p.values)} for p in points],
        "cnsim_version": cnsim_version(),
        "scenario_toml": toml,
    }


def _read_meta(out: Path) -> dict[str, Any]:
    path = out / SWEEP_JSON
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ScenarioError(f"{path}: not a readable sweep description ({e})") from None
    if not isinstance(meta, dict) or meta.get("cnsim_sweep") != _FORMAT:
        raise ScenarioError(f"{path}: not a cnsim sweep description (format {_FORMAT})")
    # A damaged description: name the field, never a TypeError further on.
    damaged = f"{path}: damaged sweep description"
    if not isinstance(meta.get("grid", {}), dict):
        raise ScenarioError(f"{damaged}: 'grid' is not a table of parameters and their values")
    seeds = meta.get("seeds", [])
    if not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
        raise ScenarioError(f"{damaged}: 'seeds' is not a list of integers")
    points = meta.get("points", [])
    if not isinstance(points, list):
        raise ScenarioError(f"{damaged}: 'points' is not a list of points")
    for i, pt in enumerate(points):
        if (
            not isinstance(pt, dict)
            or not isinstance(pt.get("id"), str)
            or not pt["id"]
            or Path(pt["id"]).name != pt["id"]
            or pt["id"].startswith(".")
            or not isinstance(pt.get("values"), dict)
        ):
            raise ScenarioError(f"{damaged}: points[{i}] is not {{id: a directory name, values: a table}}")
    return meta


def _scenario_diff(old_toml: str, new_toml: str) -> str:
    import tomllib

    def flat(d: Any, prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        if isinstance(d, dict):
            for k, v in d.items():
                out.update(flat(v, f"{prefix}{k}."))
        elif isinstance(d, list) and d and all(isinstance(x, dict) for x in d):
            for i, v in enumerate(d):
                name = v.get("name") or (f"{v.get('a')}-{v.get('b')}" if "a" in v else str(i))
                out.update(flat(v, f"{prefix}{name}."))
        else:
            out[prefix[:-1]] = d
        return out

    try:
        a, b = flat(tomllib.loads(old_toml)), flat(tomllib.loads(new_toml))
    except (tomllib.TOMLDecodeError, TypeError):
        return "its parameters"
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    if not keys:
        return "its parameters"
    shown = ", ".join(f"{k} ({_literal(a.get(k))} -> {_literal(b.get(k))})" for k in keys[:3])
    return shown + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")


def _check_same(out: Path, old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why the sweep in `out` is not this one (None: it is)."""
    why = []
    if old.get("scenario_sha256") != new["scenario_sha256"]:
        why.append(
            f"the scenario differs in {_scenario_diff(old.get('scenario_toml', ''), new['scenario_toml'])}"
        )
    if json.dumps(old.get("grid")) != json.dumps(new["grid"]):
        was = " ".join(f"{k}={','.join(map(_literal, v))}" for k, v in (old.get("grid") or {}).items())
        now = " ".join(f"{k}={','.join(map(_literal, v))}" for k, v in new["grid"].items())
        why.append(f"the grid differs (was: {was or 'none'}; now: {now or 'none'})")
    if old.get("seeds") != new["seeds"]:
        why.append(f"the seeds differ (was {old.get('seeds')}, now {new['seeds']})")
    return "; ".join(why) or None


class _SweepDir:
    """The sweep's directory: sweep.json, a lock, the point directories (each
    renamed into place when complete) and sweep.parquet."""

    def __init__(self, out: Path, meta: dict[str, Any], force: bool, label_out: str = "--out") -> None:
        self.out = out
        self.meta = meta
        self._lock: DirLock | None = None
        if out.exists() and not out.is_dir():
            raise ScenarioError(f"{label_out} {out}: exists and is not a directory")
        existing = out.is_dir() and any(p.name != _LOCK for p in out.iterdir())
        if existing and not (out / SWEEP_JSON).is_file():
            raise ScenarioError(
                f"{label_out} {out}: exists and is not a sweep directory (no {SWEEP_JSON}); "
                "give a new or empty directory"
            )
        self.created = not out.exists()
        out.mkdir(parents=True, exist_ok=True)
        self._lock = lock(out / _LOCK, f"{label_out} {out}: another cnsim sweep is running in this directory")
        try:
            if existing:
                try:
                    old = _read_meta(out)
                    why = _check_same(out, old, meta)
                except ScenarioError as e:
                    if not force:
                        raise
                    old, why = {}, str(e)
                if why is not None:
                    if not force:
                        raise ScenarioError(
                            f"{label_out} {out} holds another sweep: {why}; "
                            "use another --out, or --force to discard its results and start over"
                        )
                    self._discard(old)
                    existing = False
            self._clean_tmp()
            if not existing:
                atomic_write(out / SWEEP_JSON, json.dumps(meta, indent=2) + "\n")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _discard(self, old: dict[str, Any]) -> None:
        """--force: removes what the previous sweep wrote (nothing else)."""
        for p in old.get("points") or []:
            pid = p.get("id") if isinstance(p, dict) else None
            if isinstance(pid, str) and pid and "/" not in pid and pid not in (".", ".."):
                shutil.rmtree(self.out / pid, ignore_errors=True)
        for name in (SWEEP_JSON, SWEEP_PARQUET, "report.html"):
            with contextlib.suppress(FileNotFoundError):
                (self.out / name).unlink()
        for png in self.out.glob("sweep-*.png"):
            png.unlink()

    def _clean_tmp(self) -> None:
        """Leftovers of an interrupted sweep: half-written points and files."""
        for p in self.out.iterdir():
            if p.name.startswith(_TMP_PREFIX) or p.name.startswith(f".{SWEEP_PARQUET}."):
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)

    def finished(self, point: Point) -> dict[str, Any] | None:
        """The summary of a finished point, None if it has not finished."""
        return _read_summary(self.out / point.id)

    def write_point(
        self, point: Point, runs: list[SeedRun], report: bool, trace: Any = None
    ) -> dict[str, Any]:
        """Saves a finished point (with its event trace and captures, when
        it recorded any) into a temporary directory, then renames it into
        place: a point directory is complete or absent."""
        res = Results(point.scenario, sorted(runs, key=lambda r: r.seed))
        res.trace = trace
        tmp = self.out / f"{_TMP_PREFIX}{point.id}-{uuid.uuid4().hex[:8]}"
        try:
            res.write(tmp, report=report)
            info = {
                "id": point.id,
                "index": point.index,
                "values": _jsonable(point.values),
                "seeds": res.seeds,
            }
            atomic_write(tmp / POINT_JSON, json.dumps(info, indent=2) + "\n")
            final = self.out / point.id
            if final.exists() and _read_summary(final) is None:
                shutil.rmtree(final)  # an incomplete directory someone left there
            try:
                os.rename(tmp, final)
            except OSError:
                if _read_summary(final) is None:
                    raise
                shutil.rmtree(tmp, ignore_errors=True)  # finished meanwhile
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        summary = _read_summary(final)
        assert summary is not None
        return summary

    def write_parquet(self, frame: pl.DataFrame) -> None:
        atomic_write(self.out / SWEEP_PARQUET, frame.write_parquet)


def _read_summary(pdir: Path) -> dict[str, Any] | None:
    """A point's summary.json, or None if it is missing or damaged (not a
    summary: unreadable, not JSON, or without seeds and per-seed metrics)."""
    try:
        s = json.loads((pdir / "summary.json").read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if (
        not isinstance(s, dict)
        or not isinstance(s.get("seeds"), list)
        or not isinstance(s.get("metrics"), dict)
    ):
        return None
    n = len(s["seeds"])
    for m in s["metrics"].values():
        if not isinstance(m, dict) or not isinstance(m.get("per_seed"), list) or len(m["per_seed"]) != n:
            return None
    if not isinstance(s.get("aggregates", {}), dict):
        return None
    return s


# ---------------------------------------------------------------- table


def _rows(pid: str, values: dict[str, Any], summary: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    metrics = summary.get("metrics") or {}
    aggregates = summary.get("aggregates") or {}
    for i, seed in enumerate(summary["seeds"]):
        row: dict[str, Any] = {"point": pid, **values, "seed": seed}
        for name, m in metrics.items():
            row[name] = m["per_seed"][i]
        for name, v in aggregates.items():  # across-seed values: the same on each row
            row.setdefault(name, v)
        rows.append(row)
    return rows


def _column(name: str, values: list[Any]) -> pl.Series:
    present = [v for v in values if v is not None]
    if all(isinstance(v, bool) for v in present) and present:
        return pl.Series(name, values, dtype=pl.Boolean)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present) and present:
        return pl.Series(name, values, dtype=pl.Int64)
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return pl.Series(name, [None if v is None else float(v) for v in values], dtype=pl.Float64)
    if all(isinstance(v, str) for v in present):
        return pl.Series(name, values, dtype=pl.Utf8)
    return pl.Series(name, [None if v is None else _literal(v) for v in values], dtype=pl.Utf8)


def _frame(keys: list[str], rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Columns: point, each grid key, seed, every metric (first-seen order)."""
    cols = ["point", *keys, "seed"]
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return pl.DataFrame([_column(c, [r.get(c) for r in rows]) for c in cols])


# ------------------------------------------------------------------ load


def load_sweep(out: str | Path) -> pl.DataFrame:
    """The table of a sweep directory (one row per finished point and seed),
    rebuilt from its points' summary.json files."""
    out = Path(out)
    if not (out / SWEEP_JSON).is_file():
        raise ScenarioError(f"{out}: not a sweep directory (no {SWEEP_JSON})")
    meta = _read_meta(out)
    return sweep_frame(out, meta)


def sweep_frame(out: Path, meta: dict[str, Any]) -> pl.DataFrame:
    keys = list(meta.get("grid") or {})
    rows: list[dict[str, Any]] = []
    for p in meta.get("points") or []:
        s = _read_summary(out / p["id"])
        if s is not None:
            rows.extend(_rows(p["id"], p["values"], s))
    return _frame(keys, rows)


def damaged_points(out: Path, meta: dict[str, Any]) -> list[str]:
    """Points whose directory exists but whose summary.json is missing or
    damaged: left out of the table, and redone when the sweep is resumed."""
    return [
        p["id"]
        for p in meta.get("points") or []
        if (out / p["id"]).is_dir() and _read_summary(out / p["id"]) is None
    ]


def read_meta(out: str | Path) -> dict[str, Any]:
    """sweep.json of a sweep directory."""
    return _read_meta(Path(out))


class SweepResults:
    """A sweep directory reopened (`cnsim.open_results(DIR)`): its grid, its
    table (one row per finished point and seed) and each point's Results."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.meta = _read_meta(self.out)
        self.frame = sweep_frame(self.out, self.meta)

    @property
    def grid(self) -> dict[str, list[Any]]:
        return dict(self.meta.get("grid") or {})

    @property
    def points(self) -> list[str]:
        """Ids of the points, in grid order."""
        return [p["id"] for p in self.meta.get("points") or []]

    def point(self, pid: str) -> Any:
        """The Results of point `pid` (a point directory's name)."""
        if pid not in self.points:
            raise KeyError(f"no point '{pid}'; points: {', '.join(self.points)}")
        return read_results(self.out / pid)

    def to_polars(self) -> pl.DataFrame:
        return self.frame

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame (`pip install 'cnsim[pandas]'`)."""
        try:
            import pandas  # noqa: F401
            import pyarrow  # noqa: F401
        except ImportError:
            raise ImportError("to_pandas needs pandas and pyarrow: pip install 'cnsim[pandas]'") from None
        return self.frame.to_pandas()

    def __repr__(self) -> str:
        done = self.frame["point"].n_unique() if len(self.frame) else 0
        grid = ", ".join(f"{k} = {v}" for k, v in self.grid.items())
        return f"<cnsim.SweepResults {self.meta.get('scenario')}: {done}/{len(self.points)} points; {grid}>"

    def _repr_html_(self) -> str:
        from ..report.html import sweep_results_html

        return sweep_results_html(self)
