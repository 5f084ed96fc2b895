"""Parameter sweeps (interface.md, docs/sweeps.md): the cartesian product of
a grid of parameter values times the seeds, one results directory per grid
point, written atomically as soon as the point finishes, and `sweep.parquet`
with one row per point and seed.

Every replication is one unit of work `(point, seed) -> SeedRun`, run on a
local thread pool (the engine releases the GIL) or as one Dask task each.
Everything else (metrics, files) happens in this process from the engine's
raw output, so a point's metrics depend only on (scenario, seed), never on
the backend, the worker count or the order in which units finish.

The local backend never imports Dask.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import as_completed as _futures_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from .errors import ScenarioError
from .runner import SeedRun, run_seed
from .scenario import Scenario, load, parse_value

#: Grid keys besides the dotted parameter names of `--set`.
RUN_CHOICES = ("scheme", "pause")
#: Files of the sweep directory itself (beside the point directories).
SWEEP_JSON = "sweep.json"
SWEEP_PARQUET = "sweep.parquet"
POINT_JSON = "point.json"
_LOCK = ".sweep.lock"
_TMP_PREFIX = ".tmp-"
_FORMAT = 1
_MAX_ID = 100  # longest point directory name


# ------------------------------------------------------------------ grid


@dataclass
class Point:
    """One grid point: its values, its scenario (all seeds) and where it lives."""

    index: int
    id: str
    values: dict[str, Any]
    scenario: Scenario
    config: str = field(repr=False)  # the engine's config JSON


def parse_grid(specs: Iterable[str], label: str = "--grid") -> dict[str, list[Any]]:
    """`KEY=V1,V2,...` items (CLI `--grid`) as {key: [values]}; values are
    TOML literals like `--set` values, split at top-level commas (a value may
    be an array or an inline table)."""
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        key, sep, text = spec.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ScenarioError(f"{label} {spec}: expected KEY=V1,V2,...")
        if key in grid:
            raise ScenarioError(f"{label} {key}: given twice; list all its values in one {label} {key}=V1,V2")
        parts = _split_top(text)
        if any(not p.strip() for p in parts):
            raise ScenarioError(f"{label} {key}: empty value in '{text}'; expected {key}=V1,V2,...")
        grid[key] = [parse_value(p.strip()) for p in parts]
    return grid


def _split_top(text: str) -> list[str]:
    """Splits at commas outside quotes, brackets and braces."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    quote: str | None = None
    escaped = False
    for ch in text:
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _normalize_grid(grid: Mapping[str, Any] | None, label: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for key, vals in (grid or {}).items():
        if not isinstance(key, str) or not key.strip():
            raise ScenarioError(f"{label}: {key!r} is not a parameter name")
        if isinstance(vals, str | bytes | Mapping) or not isinstance(vals, Iterable):
            vals = [vals]
        vals = list(vals)
        if not vals:
            raise ScenarioError(f"{label} {key}: no values; expected at least one")
        seen: list[str] = []
        for v in vals:
            lit = _literal(v)
            if lit in seen:
                raise ScenarioError(f"{label} {key}: value {lit} given twice")
            seen.append(lit)
        out[key] = vals
    return out


def _literal(v: Any) -> str:
    """A value as the user would write it (TOML-ish), for names and messages."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":"), sort_keys=True)


def _apply(base: Scenario, values: dict[str, Any], label: str) -> Scenario:
    """`base` with the point's values, every error naming the grid key."""
    for key in values:
        if key == "seeds":
            raise ScenarioError(f"{label} seeds: the seeds are not a grid parameter; use --seeds N")
    if "pause" in values and not isinstance(values["pause"], bool):
        raise ScenarioError(
            f"{label} pause: {_literal(values['pause'])} is not allowed; expected true or false"
        )
    try:
        sc = base.replace(**values)
        sc.engine_json()  # resolving can still find a bad value
        return sc
    except ScenarioError as e:
        msg = str(e)
        if msg.startswith("--set "):
            raise ScenarioError(f"{label} {msg[len('--set ') :]}") from None
        if not any(msg.startswith(k) for k in values):
            msg = f"{', '.join(values)}: {msg}"
        raise ScenarioError(f"{label} {msg}") from None


def build_points(base: Scenario, grid: Mapping[str, Any] | None, label: str = "--grid") -> list[Point]:
    """Every grid point (the first key varies slowest), validated: a bad key
    or value raises ScenarioError naming it before anything runs."""
    g = _normalize_grid(grid, label)
    for key, vals in g.items():  # one key at a time: the message names exactly it
        for v in vals:
            _apply(base, {key: v}, label)
    combos = list(itertools.product(*g.values())) if g else [()]
    width = max(3, len(str(len(combos) - 1)))
    points = []
    for i, combo in enumerate(combos):
        values = dict(zip(g, combo, strict=True))
        sc = _apply(base, values, label)
        points.append(Point(i, _point_id(i, width, values), values, sc, sc.engine_json()))
    return points


def _point_id(index: int, width: int, values: dict[str, Any]) -> str:
    name = f"p{index:0{width}d}"
    if values:
        name += "-" + ",".join(f"{k}={_literal(v)}" for k, v in values.items())
    name = re.sub(r"[^A-Za-z0-9._=,+-]", "_", name)
    return name[:_MAX_ID]


# ------------------------------------------------------------- directory


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x))


def _meta(base: Scenario, points: list[Point], grid: dict[str, list[Any]]) -> dict[str, Any]:
    import tomli_w

    from . import __version__

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
        "cnsim_version": __version__,
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
        self._lock_fd: int | None = None
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
        self._lock(label_out)
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
                _atomic_text(out / SWEEP_JSON, json.dumps(meta, indent=2) + "\n")
        except BaseException:
            self.close()
            raise

    def _lock(self, label_out: str) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            return
        fd = os.open(self.out / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ScenarioError(
                f"{label_out} {self.out}: another cnsim sweep is running in this directory"
            ) from None
        except OSError:  # a filesystem without locks: go on unlocked
            pass
        self._lock_fd = fd

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

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

    def write_point(self, point: Point, runs: list[SeedRun], report: bool) -> dict[str, Any]:
        """Saves a finished point into a temporary directory, then renames it
        into place: a point directory is complete or absent."""
        from .results import Results

        res = Results(point.scenario, sorted(runs, key=lambda r: r.seed))
        tmp = self.out / f"{_TMP_PREFIX}{point.id}-{uuid.uuid4().hex[:8]}"
        try:
            res.save(tmp, report=report)
            info = {
                "id": point.id,
                "index": point.index,
                "values": _jsonable(point.values),
                "seeds": res.seeds,
            }
            _atomic_text(tmp / POINT_JSON, json.dumps(info, indent=2) + "\n")
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
        fd, tmp = tempfile.mkstemp(dir=self.out, prefix=f".{SWEEP_PARQUET}.")
        os.close(fd)
        try:
            frame.write_parquet(tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.out / SWEEP_PARQUET)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def _read_summary(pdir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((pdir / "summary.json").read_text())
    except (OSError, ValueError):
        return None


def _atomic_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


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


# -------------------------------------------------------------- backends


class _Cancelled(Exception):
    pass


class _LocalBackend:
    """Threads over local cores: the engine releases the GIL while it runs."""

    name = "local"

    def __init__(self, jobs: int) -> None:
        self.pool = ThreadPoolExecutor(jobs, thread_name_prefix="cnsim-sweep")
        self.stop = threading.Event()

    def submit(self, config: str, seed: int, advance: Any) -> Future[SeedRun]:
        def step(ms: float) -> None:
            if self.stop.is_set():
                raise _Cancelled
            if advance is not None:
                advance(ms)

        return self.pool.submit(run_seed, config, seed, step)

    def streams_progress(self) -> bool:
        return True

    def as_completed(self, futures: list[Any]) -> Iterator[Any]:
        return _futures_completed(futures)

    def result(self, fut: Future[SeedRun]) -> SeedRun:
        return fut.result()

    def close(self, cancel: bool) -> None:
        if cancel:
            self.stop.set()
        self.pool.shutdown(wait=True, cancel_futures=cancel)


def _dask_unit(config: str, seed: int) -> tuple[str, SeedRun]:
    """One replication on a Dask worker (with the worker's engine version)."""
    from . import _core

    return _core.version(), run_seed(config, seed)


class _DaskBackend:
    """One Dask task per replication, on a running scheduler (`address` or a
    `client`) or on a LocalCluster started here."""

    name = "dask"

    def __init__(self, jobs: int | None, address: str | None, client: Any | None) -> None:
        try:
            import distributed
        except ImportError:
            raise ScenarioError(
                "--backend dask: Dask is not installed; install it with: pip install 'cnsim[dask]'"
            ) from None
        self.distributed = distributed
        self.cluster = None
        self.own_client = client is None
        if client is not None:
            self.client = client
        elif address is not None:
            try:
                self.client = distributed.Client(address, timeout="10s")
            except (OSError, TimeoutError, ValueError) as e:
                raise ScenarioError(f"--address {address}: no Dask scheduler answers there ({e})") from None
        else:
            import logging

            self.cluster = distributed.LocalCluster(
                n_workers=jobs or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            self.client = distributed.Client(self.cluster)
        self.futures: list[Any] = []
        self.token = uuid.uuid4().hex[:8]

    def submit(self, config: str, seed: int, advance: Any) -> Any:
        key = f"cnsim-{self.token}-{len(self.futures)}-seed{seed}"
        fut = self.client.submit(_dask_unit, config, seed, key=key, retries=3, pure=False)
        self.futures.append(fut)
        return fut

    def streams_progress(self) -> bool:
        return False

    def as_completed(self, futures: list[Any]) -> Iterator[Any]:
        return iter(self.distributed.as_completed(futures))

    def result(self, fut: Any) -> SeedRun:
        from . import _core

        version, run = fut.result()
        if version != _core.version():
            raise RuntimeError(
                f"a Dask worker runs cnsim engine {version}, this process {_core.version()}; "
                "install the same cnsim on the workers"
            )
        return run

    def close(self, cancel: bool) -> None:
        with contextlib.suppress(Exception):
            if cancel and self.futures:
                self.client.cancel(self.futures)
        if self.own_client:
            with contextlib.suppress(Exception):
                self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()


# ----------------------------------------------------------------- sweep


@dataclass
class SweepOutcome:
    """What a sweep did: the table, where, how many points ran and were skipped."""

    frame: pl.DataFrame
    out: Path | None
    points: int
    ran: int
    skipped: int


def sweep(
    scenario: Scenario | str | Path,
    grid: Mapping[str, Any] | None = None,
    *,
    seeds: int | Iterable[int] | None = None,
    backend: str = "local",
    out: str | Path | None = None,
    jobs: int | None = None,
    address: str | None = None,
    client: Any | None = None,
    force: bool = False,
    report: bool = True,
    progress: bool | None = None,
) -> pl.DataFrame:
    """Runs `scenario` (a Scenario, a built-in name or a TOML path) at every
    point of `grid` ({dotted name, "scheme" or "pause": values}) for each of
    `seeds` (a count or a list; default the scenario's), and returns a polars
    DataFrame with one row per point and seed: `point`, each grid key, `seed`
    and every metric.

    `out`: the sweep directory (one results directory per point, sweep.json,
    sweep.parquet, report.html); rerunning with the same `out` skips finished
    points, and a different sweep there is refused unless `force`. Without
    `out` nothing is kept on disk. `backend`: "local" (`jobs` threads,
    default all cores) or "dask" (`client`, a scheduler `address`, or a
    LocalCluster of `jobs` workers)."""
    return run_sweep(
        scenario,
        grid,
        seeds=seeds,
        backend=backend,
        out=out,
        jobs=jobs,
        address=address,
        client=client,
        force=force,
        report=report,
        progress=progress,
        label="grid",
    ).frame


def run_sweep(
    scenario: Scenario | str | Path,
    grid: Mapping[str, Any] | None = None,
    *,
    seeds: int | Iterable[int] | None = None,
    backend: str = "local",
    out: str | Path | None = None,
    jobs: int | None = None,
    address: str | None = None,
    client: Any | None = None,
    force: bool = False,
    report: bool = True,
    progress: bool | None = None,
    label: str = "--grid",
) -> SweepOutcome:
    """`sweep` returning a SweepOutcome (what the CLI prints)."""
    base = scenario if isinstance(scenario, Scenario) else load(scenario)
    if seeds is not None:
        base = base.replace(seeds=seeds)
    if backend not in ("local", "dask"):
        raise ScenarioError(f"--backend: {backend!r} is not allowed; allowed: local, dask")
    if backend == "local" and (address is not None or client is not None):
        raise ScenarioError("--address: a Dask scheduler needs --backend dask")
    if jobs is not None and jobs < 1:
        raise ScenarioError(f"--jobs: {jobs} is not allowed; expected an integer >= 1")
    points = build_points(base, grid, label)
    g = _normalize_grid(grid, label)
    if out is None:
        with tempfile.TemporaryDirectory(prefix="cnsim-sweep-") as tmp:
            res = _sweep_in(
                Path(tmp), base, points, g, backend, jobs, address, client, force, False, progress
            )
            res.out = None
            return res
    return _sweep_in(Path(out), base, points, g, backend, jobs, address, client, force, report, progress)


def _sweep_in(
    out: Path,
    base: Scenario,
    points: list[Point],
    grid: dict[str, list[Any]],
    backend_name: str,
    jobs: int | None,
    address: str | None,
    client: Any | None,
    force: bool,
    report: bool,
    progress: bool | None,
) -> SweepOutcome:
    keys = list(grid)
    meta = _meta(base, points, grid)
    sd = _SweepDir(out, meta, force)
    try:
        rows: dict[int, list[dict[str, Any]]] = {}
        todo: list[Point] = []
        for p in points:
            s = sd.finished(p)
            if s is not None:
                rows[p.index] = _rows(p.id, p.values, s)
            else:
                todo.append(p)

        def table() -> pl.DataFrame:
            return _frame(keys, [r for i in sorted(rows) for r in rows[i]])

        if todo:
            try:
                backend = _backend(backend_name, jobs, address, client, len(todo) * len(base.seeds))
            except ScenarioError:
                if sd.created and not rows:  # leave no trace of a sweep that could not start
                    sd.close()
                    shutil.rmtree(out, ignore_errors=True)
                raise
            _run_points(sd, backend, todo, rows, table, report, progress, base)
        frame = table()
        sd.write_parquet(frame)
        if report:
            from .report import write_sweep_report

            write_sweep_report(out, meta, frame)
        return SweepOutcome(frame, out, len(points), len(todo), len(points) - len(todo))
    finally:
        sd.close()


def _backend(name: str, jobs: int | None, address: str | None, client: Any | None, units: int) -> Any:
    if name == "local":
        return _LocalBackend(max(1, min(jobs or os.cpu_count() or 1, units)))
    return _DaskBackend(jobs, address, client)


def _run_points(
    sd: _SweepDir,
    backend: Any,
    todo: list[Point],
    rows: dict[int, list[dict[str, Any]]],
    table: Any,
    report: bool,
    progress: bool | None,
    base: Scenario,
) -> None:
    units = [(p, s) for p in todo for s in p.scenario.seeds]
    show = sys.stderr.isatty() if progress is None else progress
    bar = _Bar(show, base.name, backend.name, len(todo), len(rows) + len(todo), units)
    pending: dict[int, dict[int, SeedRun]] = {p.index: {} for p in todo}
    ok = False
    try:
        with bar:
            futures = {}
            for p, seed in units:
                adv = bar.advance if backend.streams_progress() else None
                futures[backend.submit(p.config, seed, adv)] = (p, seed)
            for fut in backend.as_completed(list(futures)):
                p, seed = futures.pop(fut)
                run = backend.result(fut)
                if not backend.streams_progress():
                    bar.advance(p.scenario.duration_ms)
                got = pending[p.index]
                got[seed] = run
                if len(got) == len(p.scenario.seeds):
                    del pending[p.index]
                    summary = sd.write_point(p, list(got.values()), report)
                    rows[p.index] = _rows(p.id, p.values, summary)
                    sd.write_parquet(table())
                    bar.point_done()
        ok = True
    finally:
        backend.close(cancel=not ok)


class _Bar:
    """A rich progress bar over the points (advancing with simulated time,
    so its time-left estimate moves between points), on stderr."""

    def __init__(self, show: bool, name: str, backend: str, todo: int, total: int, units: list[Any]) -> None:
        self.show = show
        self.done = total - todo
        self.total = total
        self.lock = threading.Lock()
        self.progress: Any = None
        if not show:
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[points]}"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.task = self.progress.add_task(
            f"sweep {name} ({backend})",
            total=sum(p.scenario.duration_ms for p, _ in units),
            points=self._points(),
        )

    def _points(self) -> str:
        return f"{self.done}/{self.total} points"

    def __enter__(self) -> _Bar:
        if self.progress is not None:
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)

    def advance(self, ms: float) -> None:
        if self.progress is not None:
            self.progress.advance(self.task, ms)

    def point_done(self) -> None:
        with self.lock:
            self.done += 1
        if self.progress is not None:
            self.progress.update(self.task, points=self._points())


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


def read_meta(out: str | Path) -> dict[str, Any]:
    """sweep.json of a sweep directory."""
    return _read_meta(Path(out))
