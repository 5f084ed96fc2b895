"""The event trace and packet captures of a run (docs/looking-at-frames.md).

A scenario asks for them in `[trace]` (`events = [...]` with its filters,
`pcap = ["FROM->TO", ...]`). The engine writes them itself while it runs,
each seed into the run's trace directory:

- `events.seed<K>.parquet`: that seed's rows, a row group at a time;
- `pcap/<FROM>-to-<TO>.seed<K>.pcapng`: one capture per port and seed.

`cnsim run --out DIR` gives the engine the results directory's temporary
sibling, so the captures are written where they stay; `cnsim.run(sc)`
without a directory gives it a temporary directory that lives as long as
the Results (`trace_dir=` keeps it elsewhere: a new or empty directory).
Saving the results (`Results.write` / `save`, `cnsim run`) concatenates the
seeds' event files into `DIR/events.parquet` (streamed, never all rows in
memory; a `seed` column tells them apart) and puts the captures in
`DIR/pcap/`; `cnsim.open_results(DIR).events()` reads them back, filtered
as it reads (`scan_events` gives the lazy frame)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings as _warnings
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ScenarioError

if TYPE_CHECKING:  # polars is imported when the events are read, not by every run
    import polars as pl

#: The merged event trace of a results directory, and its captures' directory.
EVENTS_FILE = "events.parquet"
PCAP_DIR = "pcap"
#: What the engine writes into a run's trace directory (a directory holding
#: any of these already holds a trace: another run's).
_ENGINE_FILES = ("events.seed*.parquet", f"{PCAP_DIR}/*.pcapng")


class TraceCapWarning(UserWarning):
    """A seed's event trace reached `trace.max_rows`, or its captures
    `trace.pcap_max_bytes`: its later events or frames were not recorded."""


class TraceMemoryWarning(UserWarning):
    """Reading the event trace into memory will probably not fit: read it
    filtered, or lazily (`Results.scan_events`)."""


def records(scenario: Any) -> bool:
    """Whether `scenario` asks for an event trace or a capture."""
    t = scenario.model.trace
    return bool(t.events or t.pcap)


def staging_dir() -> Path:
    """A new temporary directory for a run's trace (`cnsim.run` without `trace_dir`)."""
    return Path(tempfile.mkdtemp(prefix="cnsim-trace-"))


def trace_dir_checked(trace_dir: Any) -> Path:
    """`cnsim.run(..., trace_dir=...)` checked before anything runs: a path
    (str or os.PathLike, not empty) to a new or empty directory, or one
    holding nothing the engine writes. Another run's trace there would be
    overwritten under the Results that read it, or listed as this run's."""
    if isinstance(trace_dir, bytes) or not isinstance(trace_dir, str | os.PathLike):
        raise ScenarioError(
            f"trace_dir: {trace_dir!r} is not allowed; expected a directory path (str or pathlib.Path)"
        )
    if str(trace_dir).strip() == "":
        raise ScenarioError("trace_dir: '' is not allowed; expected a directory path")
    d = Path(trace_dir)
    if d.exists() and not d.is_dir():
        raise ScenarioError(f"trace_dir: {d} exists and is not a directory")
    if d.is_dir():
        try:
            held = next((p for pattern in _ENGINE_FILES for p in d.glob(pattern)), None)
        except OSError as e:
            raise ScenarioError(f"trace_dir: {d} cannot be read ({e.strerror or e})") from None
        if held is not None or (d / EVENTS_FILE).exists():
            raise ScenarioError(
                f"trace_dir: {d} already holds a trace ({(held or d / EVENTS_FILE).relative_to(d)}); "
                "give a new or empty directory for each run"
            )
    return d


# ------------------------------------------------------------- reading


def _names(what: str, value: Any, allowed: Iterable[str] | None = None) -> list[str]:
    """A filter's names: one string or a list of strings (checked against `allowed`)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple | set | frozenset) or not all(isinstance(x, str) for x in items):
        raise ScenarioError(f"events: {what}={value!r} is not allowed; expected a name or a list of names")
    if allowed is not None:
        known = list(allowed)
        bad = [x for x in items if x not in known]
        if bad:
            raise ScenarioError(f"events: {what}: {bad[0]!r} is not allowed; allowed: {', '.join(known)}")
    return sorted(set(items))


def event_kinds() -> list[str]:
    """The event kinds (docs/looking-at-frames.md), as the engine declares them."""
    from .declarations import declarations

    for t in declarations()["sections"]:
        if t["name"] == "trace":
            for p in t["params"]:
                if p["name"] == "events":
                    return [k for k in p["choices"] if k != "all"]
    raise AssertionError("the engine declares trace.events")  # pragma: no cover


def _time_window(time_ms: Any) -> tuple[int, int]:
    """`time_ms=(t0, t1)` in ms as [t0, t1) in picoseconds (None: an open end)."""

    def ps(v: Any, open_end: int) -> int:
        if v is None:
            return open_end
        if isinstance(v, bool) or not isinstance(v, int | float) or v != v:
            raise ValueError
        x = float(v) * 1e9
        return 2**64 if x >= 2**64 else 0 if x <= 0 else int(round(x))

    try:
        if not isinstance(time_ms, tuple | list) or len(time_ms) != 2:
            raise ValueError
        return ps(time_ms[0], 0), ps(time_ms[1], 2**64)
    except (ValueError, OverflowError):
        raise ScenarioError(
            f"events: time_ms={time_ms!r} is not allowed; expected (start_ms, end_ms), either None for open"
        ) from None


class TraceFiles:
    """Where a run's trace is: the per-seed files the engine wrote into
    `root` (`per_seed`: each seed's summary from the engine), or the merged
    files of a results directory (`per_seed` None; `saved`: its
    summary.json, whose `trace` and `files` list them). A temporary `root`
    the run made for itself is removed with this object (`owned`)."""

    def __init__(
        self,
        root: Path,
        per_seed: dict[int, dict[str, Any]] | None,
        owned: bool = False,
        saved: dict[str, Any] | None = None,
    ) -> None:
        self.root = Path(root)
        self.per_seed = per_seed
        self.saved = saved or {}
        if owned:
            weakref.finalize(self, shutil.rmtree, str(self.root), True)

    # ------------------------------------------------------------- reading
    def _event_sources(self, seeds: list[int] | None = None) -> list[str]:
        merged = self.root / EVENTS_FILE
        if self.per_seed is None or merged.is_file():
            return [str(merged)] if merged.is_file() else []
        out = []
        for s, t in sorted(self.per_seed.items()):
            f = t.get("events_file")
            if f and (seeds is None or s in seeds) and Path(f).is_file():
                out.append(f)
        return out

    def rows(self) -> dict[int, int]:
        """Rows recorded per seed (summary.json's trace.rows)."""
        if self.per_seed is not None:
            return {s: int(t.get("rows") or 0) for s, t in self.per_seed.items() if t.get("events_file")}
        rows = (self.saved.get("trace") or {}).get("rows") or {}
        return {int(s): int(n) for s, n in rows.items()}

    def scan_events(
        self,
        seed: int | Iterable[int] | None = None,
        *,
        kinds: str | Iterable[str] | None = None,
        nodes: str | Iterable[str] | None = None,
        ports: str | Iterable[str] | None = None,
        flows: str | Iterable[str] | None = None,
        time_ms: tuple[float | None, float | None] | None = None,
        columns: Iterable[str] | None = None,
    ) -> pl.LazyFrame | None:
        """The events as a polars LazyFrame (in the order the engine recorded
        them), filtered as they are read (Parquet row groups whose
        statistics rule them out are skipped), or None when the run recorded
        no event. Arguments as `Results.events`, checked by it."""
        seeds = None if seed is None else [seed] if isinstance(seed, int) else list(seed)
        src = self._event_sources(seeds)
        if not src:
            return None
        import polars as pl

        lf = pl.scan_parquet(src)
        preds = []
        if seeds is not None:
            preds.append(pl.col("seed").is_in(seeds))
        for col, v in (("kind", kinds), ("node", nodes), ("port", ports), ("flow", flows)):
            if v is not None:
                preds.append(pl.col(col).is_in(list(v)))
        if time_ms is not None:
            lo, hi = _time_window(time_ms)
            if lo > 0:
                preds.append(pl.col("time_ps") >= lo)
            if hi < 2**64:
                preds.append(pl.col("time_ps") < hi)
        if preds:
            lf = lf.filter(pl.all_horizontal(preds))
        if columns is not None:
            cols = list(columns)
            for c in ("seed", "time_ps"):  # the order needs them: kept first
                if c not in cols:
                    cols.insert(0 if c == "seed" else 1, c)
            lf = lf.select(cols)
        # Names as categoricals: 4 bytes a value instead of a 16-byte string
        # view (10 M rows: 1.3 GB instead of 2.4 GB); they compare, filter,
        # group and join as strings do.
        names = [c for c, dt in lf.collect_schema().items() if dt == pl.String]
        return lf.with_columns(pl.col(names).cast(pl.Categorical)) if names else lf

    def events(self, seed: int | Iterable[int] | None = None, **filters: Any) -> pl.DataFrame:
        """The events of every seed (or of `seed`), filtered (see
        `Results.events`), sorted by seed and time; events at the same time
        keep the order they happened in. Warns (TraceMemoryWarning) before
        a read that will probably not fit in the memory left."""
        import polars as pl

        lf = self.scan_events(seed, **filters)
        if lf is None:
            return pl.DataFrame()
        _warn_if_too_big(lf, self._event_sources(None), bool(filters) or seed is not None)
        return _read_sorted(lf)

    def captures(self) -> list[dict[str, Any]]:
        """Each capture the run wrote: `file` (relative to the results
        directory, `pcap/...`), `port`, `seed`, `frames`, `bytes`; from the
        engine's summary (a run) or summary.json (a results directory; an
        older one lists its file names only)."""
        if self.per_seed is not None:
            return [
                {
                    "file": f"{PCAP_DIR}/{Path(p['file']).name}",
                    "port": p.get("port"),
                    "seed": s,
                    "frames": p.get("frames"),
                    "bytes": p.get("bytes"),
                }
                for s, t in sorted(self.per_seed.items())
                for p in t.get("pcap", [])
            ]
        files = self.saved.get("files") or {}
        listed = (self.saved.get("trace") or {}).get("pcap")
        if listed is None:  # written before summary.json listed captures
            d = self.root / PCAP_DIR
            listed = [f"{PCAP_DIR}/{p.name}" for p in sorted(d.glob("*.pcapng"))] if d.is_dir() else []
        out = []
        for name in listed:
            info = files.get(name) or {}
            seed = info.get("seed", _seed_of(name))
            out.append({"file": name, **info, "seed": seed})
        return out

    def pcap_files(self, seed: int | None = None) -> list[Path]:
        """The captures (one per port and seed), sorted by name."""
        return sorted(self.root / c["file"] for c in self.captures() if seed is None or c.get("seed") == seed)

    def summary(self) -> dict[str, Any]:
        """What summary.json says of the trace: rows per seed, the seeds
        whose event trace reached its row cap (and when), the captures, the
        seeds whose captures reached their byte cap."""
        if self.per_seed is None:
            return dict(self.saved.get("trace") or {})
        per = self.per_seed
        return {
            "events": EVENTS_FILE if any(t.get("events_file") for t in per.values()) else None,
            "rows": {str(s): t.get("rows", 0) for s, t in sorted(per.items())},
            "capped_at_ps": {
                str(s): t["capped_at_ps"] for s, t in sorted(per.items()) if t.get("capped_at_ps") is not None
            },
            "max_rows": next((t.get("max_rows") for t in per.values()), None),
            "pcap": [c["file"] for c in self.captures()],
            "pcap_max_bytes": next((t.get("pcap_max_bytes") for t in per.values()), None),
            "pcap_capped_at_ps": {
                str(s): t["pcap_capped_at_ps"]
                for s, t in sorted(per.items())
                if t.get("pcap_capped_at_ps") is not None
            },
        }

    def manifest(self, out: Path) -> dict[str, dict[str, Any]]:
        """summary.json's `files` entries of the trace in results directory
        `out` (after `write`): events.parquet's rows and bytes, each
        capture's port, seed, frames and bytes."""
        from .runid import crc32

        out = Path(out)
        files: dict[str, dict[str, Any]] = {}
        if (out / EVENTS_FILE).is_file() and self.summary().get("events"):
            files[EVENTS_FILE] = {
                "rows": sum(self.rows().values()),
                "bytes": (out / EVENTS_FILE).stat().st_size,
                "crc32": crc32(out / EVENTS_FILE),
            }
        for c in self.captures():
            p = out / c["file"]
            if p.is_file():
                files[c["file"]] = {
                    "port": c.get("port"),
                    "seed": c.get("seed"),
                    "frames": c.get("frames"),
                    "bytes": p.stat().st_size,
                    "crc32": crc32(p),
                }
        return files

    # ------------------------------------------------------------- writing
    def write(self, out: Path, seeds: list[int], identity: dict[str, str] | None = None) -> None:
        """Puts the trace of `seeds` into results directory `out`:
        `events.parquet` (the seeds' files concatenated, streamed, with the
        run's `identity` in its footer, as every Parquet file of a results
        directory has) and the listed captures in `pcap/`. When `out` is
        this trace's own directory, the per-seed event files (and any of a
        seed that did not finish) are removed."""
        out = Path(out)
        identity = identity or {}
        if self.per_seed is None:  # a saved directory: copy it as it is
            if out.resolve() != self.root.resolve():
                if (self.root / EVENTS_FILE).is_file():
                    shutil.copy2(self.root / EVENTS_FILE, out / EVENTS_FILE)
                for c in self.captures():
                    if (self.root / c["file"]).is_file():
                        (out / PCAP_DIR).mkdir(exist_ok=True)
                        shutil.copy2(self.root / c["file"], out / c["file"])
            return
        same = out.resolve() == self.root.resolve()
        src = self._event_sources(seeds)
        target = out / EVENTS_FILE
        # One seed's file already names this run (the engine wrote the identity the run
        # was given) unless only some seeds finished: then it is rewritten like a merge.
        as_is = len(src) == 1 and _footer(src[0], identity) == identity
        if as_is and same:
            os.replace(src[0], target)
        elif as_is:
            shutil.copy2(src[0], target)
        elif src:
            import polars as pl

            pl.scan_parquet(src).sink_parquet(target, compression="zstd", metadata=identity or None)
        for c in self.captures():
            p = self.root / c["file"]
            if same:
                if c["seed"] not in seeds:
                    p.unlink(missing_ok=True)
            elif c["seed"] in seeds:
                (out / PCAP_DIR).mkdir(exist_ok=True)
                shutil.copy2(p, out / c["file"])
        if same:
            for p in self.root.glob("events.seed*.parquet"):
                p.unlink()
            # From now on the merged file is the trace.
            self.per_seed = {s: t for s, t in self.per_seed.items() if s in seeds}


def _seed_of(name: str) -> int | None:
    """The seed in a capture's name (`...seedK.pcapng`), or None."""
    try:
        return int(name.rsplit(".seed", 1)[1].split(".")[0])
    except (IndexError, ValueError):
        return None


def _warn_if_too_big(lf: Any, sources: list[str], filtered: bool) -> None:
    """Warns when reading `lf` whole will probably not fit the memory left:
    its rows (counted under the filters only when the whole trace would not
    fit) times the bytes a row of its columns takes in memory."""
    from .guards import available_memory, human

    avail = available_memory()
    if avail is None or not sources:
        return
    import polars as pl

    per_row = _row_bytes(lf.collect_schema())
    total = sum(pl.scan_parquet(s).select(pl.len()).collect().item() for s in sources)
    if total * per_row <= avail:
        return
    rows = lf.select(pl.len()).collect().item() if filtered else total
    need = rows * per_row
    if need > avail:
        _warnings.warn(
            f"events: reading {rows:,} rows takes about {human(need)}, more than the {human(avail)} of memory "
            "left; read fewer (events(seed=..., kinds=..., time_ms=(t0, t1), columns=[...])) or lazily "
            "(scan_events(): a polars LazyFrame), docs/looking-at-frames.md",
            TraceMemoryWarning,
            stacklevel=4,
        )


#: Bytes a value of each column type takes in a polars DataFrame (its
#: validity bit rounded up; a name is a categorical's 4-byte code), and the
#: read's own overhead over that: 10 M rows of every column (1.35 GB of
#: frame, a 50 MB file) peaked at 1.94 GB RSS, the process included
#: (docs/looking-at-frames.md).
_DTYPE_BYTES = {
    "Boolean": 1,
    "UInt8": 2,
    "UInt16": 3,
    "UInt32": 5,
    "Categorical": 5,
    "String": 17,
    "Int64": 9,
    "UInt64": 9,
    "Float64": 9,
}
READ_OVERHEAD = 1.2


def _row_bytes(schema: Any) -> float:
    return READ_OVERHEAD * sum(_DTYPE_BYTES.get(str(dt), 9) for dt in schema.values())


def _collect_streaming(lf: Any) -> Any:
    """`lf` collected by polars' streaming engine: a Parquet scan is read a
    batch at a time, each batch's names cast before the next is read, so
    the read holds little more than the frame it returns (the in-memory
    engine holds every string first: 2.6 GB against 1.4 GB for 10 M rows)."""
    try:
        return lf.collect(engine="streaming")
    except TypeError:  # pragma: no cover - polars before 1.23
        return lf.collect(streaming=True)


def _read_sorted(lf: Any) -> Any:
    """`lf` collected and sorted (sort_events), holding the frame once: no
    caller keeps the unsorted frame alive while its columns are replaced."""
    box = [_collect_streaming(lf)]
    return sort_events(box)


def sort_events(df: pl.DataFrame | list[pl.DataFrame]) -> pl.DataFrame:
    """`df` sorted by seed and time, events at the same time in the order
    they were recorded (a stable sort): the order is found with numpy (one
    stable sort of the times of each seed's rows, which come seed by seed;
    polars' two-key stable sort took 50 s for 10 M rows), then the frame is
    gathered a column at a time, so that it never holds two copies of the
    frame. When the rows are in order already nothing is copied."""
    import numpy as np
    import polars as pl

    if isinstance(df, list):  # the only reference: taken out so the sort can free its columns
        df = df.pop()
    if len(df) < 2 or "time_ps" not in df.columns or "seed" not in df.columns:
        return df
    seed = df.get_column("seed").to_numpy()
    time = df.get_column("time_ps").to_numpy()
    ds, dt = np.diff(seed), np.diff(time.astype(np.int64, copy=False) if time.dtype != np.uint64 else time)
    if time.dtype == np.uint64:
        later = time[1:] >= time[:-1]
    else:
        later = dt >= 0
    if bool(np.all((ds > 0) | ((ds == 0) & later))):
        return df
    if bool(np.all(ds >= 0)):  # seed by seed: sort each seed's times
        cut = np.flatnonzero(ds) + 1
        order = np.concatenate(
            [
                a + np.argsort(time[a:b], kind="stable")
                for a, b in zip(np.r_[0, cut], np.r_[cut, len(time)], strict=True)
            ]
        )
    else:
        order = np.lexsort((time, seed))  # stable: the last key first
    del seed, time, ds, dt, later
    idx = pl.Series("order", order, dtype=pl.UInt64)
    del order
    names = df.columns
    for i in range(0, len(names), 4):  # four columns at a time, gathered in parallel
        df = df.with_columns(pl.col(names[i : i + 4]).gather(idx))
    return df


# ------------------------------------------------------------- checking


def _footer(path: str | Path, keys: Any) -> dict[str, str | None]:
    """The values of `keys` in a Parquet file's footer (None: absent)."""
    import polars as pl

    kv = pl.read_parquet_metadata(path)
    return {k: kv.get(k) for k in keys}


def pcap_header(path: Path) -> dict[str, Any]:
    """What a pcapng file says of itself, read from its first blocks and its
    last: `comment` (the `key=value; ...` pairs of its section header
    comment: the run and seed cnsim wrote it for; {} without one),
    `interface` (its first interface's name: the port), and `whole`
    (whether its last block ends where the file does: not cut mid-frame).
    Raises ValueError for a file that is not pcapng or is damaged."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8 or head[:4] != b"\x0a\x0d\x0d\x0a":
            raise ValueError("not a pcapng file")
        length = int.from_bytes(head[4:8], "little")
        if not 28 <= length <= 1 << 20 or length % 4 or length > size:
            raise ValueError("a damaged section header")
        body = f.read(length - 8)
        comment = _options(body, 16, 1)
        idb = f.read(8)
        interface = None
        if len(idb) == 8 and int.from_bytes(idb[:4], "little") == 1:
            n = int.from_bytes(idb[4:8], "little")
            if not 20 <= n <= 1 << 20 or length + n > size:
                raise ValueError("a damaged interface block")
            interface = _options(f.read(n - 8), 8, 2)
        f.seek(max(0, size - 4))
        tail = int.from_bytes(f.read(4), "little")
        whole = False
        if 12 <= tail <= size and tail % 4 == 0:
            f.seek(size - tail + 4)
            whole = int.from_bytes(f.read(4), "little") == tail
    pairs: dict[str, str] = {}
    for part in (comment or "").split("; "):
        k, sep, v = part.partition("=")
        if sep:
            pairs[k] = v
    return {"comment": pairs, "interface": interface, "whole": whole, "bytes": size}


def _options(body: bytes, start: int, want: int) -> str | None:
    """The value of option `want` among a block body's options (from
    `start`), as text; None when absent."""
    i = start
    while i + 4 <= len(body) - 4:
        code, n = int.from_bytes(body[i : i + 2], "little"), int.from_bytes(body[i + 2 : i + 4], "little")
        if code == 0:
            break
        if code == want:
            return body[i + 4 : i + 4 + n].decode("utf-8", "replace")
        i += 4 + (n + 3) // 4 * 4
    return None


# ------------------------------------------------------------- warnings


def unintended(scenario: Any) -> list[str]:
    """Trace settings that are legal but almost certainly not meant: one line each."""
    t = scenario.model.trace
    out = []
    filters = [k for k in ("event_nodes", "event_ports", "event_flows") if getattr(t, k)]
    if filters and not t.events:
        out.append(f"trace.{filters[0]}: set, but trace.events is empty, so no event is recorded")
    for key in ("to_ms", "from_ms", "snaplen", "max_rows", "pcap_max_bytes"):
        if records(scenario):
            break
        if _is_set(scenario, key):
            out.append(f"trace.{key}: set, but trace.events and trace.pcap are empty, so nothing is recorded")
            break
    if t.events and not t.pcap and _is_set(scenario, "snaplen"):
        out.append("trace.snaplen: set, but trace.pcap is empty: it only applies to captures")
    for f in t.event_flows:
        a, _, b = f.partition("|")
        if a.strip() and a.strip() == b.strip():
            out.append(f"trace.event_flows: '{f}' is a station's flow to itself, which no frame has")
    if records(scenario) and t.from_ms >= scenario.duration_ms:
        out.append(
            f"trace.from_ms: {t.from_ms:g} ms is not before the run's end (duration_ms = "
            f"{scenario.duration_ms:g}); nothing will be recorded"
        )
    est = capture_estimate(scenario)
    if est is not None and est["bytes"] > CAPTURE_WARN_BYTES:
        from .guards import human

        capped = min(est["bytes"], est["cap"] * len(scenario.seeds))
        out.append(
            f"trace.pcap: the captures may take up to {human(est['bytes'])} ({est['ports']} port(s) busy for "
            f"{est['ms']:g} ms x {len(scenario.seeds)} seed(s), about {human(est['per_port_ms'])} per port and "
            f"ms at line rate); trace.pcap_max_bytes stops each seed's at {human(est['cap'])} "
            f"(at most {human(capped)} in all): narrow trace.pcap or trace.from_ms / to_ms"
        )
    return out


def _is_set(scenario: Any, key: str) -> bool:
    """Whether trace.`key` differs from its declared default."""
    from .scenario import model as M

    default = next(p.get("default") for p in M.TRACE["params"] if p["name"] == key)
    return getattr(scenario.model.trace, key) != default


#: Captures estimated above this many bytes in all draw a warning.
CAPTURE_WARN_BYTES = 1 << 30
#: Bytes a captured frame adds beyond its own (its enhanced packet block).
_EPB_OVERHEAD = 32


def capture_estimate(scenario: Any) -> dict[str, Any] | None:
    """An upper bound on the captures of `scenario`: every captured port
    sending at its link's rate through the capture window, each frame its
    enhanced packet block (32 bytes) beyond its bytes up to `snaplen`; None
    without captures. `bytes` (all seeds), `per_port_ms`, `ports`, `ms`,
    `cap` (trace.pcap_max_bytes, per seed)."""
    m = scenario.model
    t = m.trace
    if not t.pcap:
        return None
    try:
        cfg = scenario.engine_config_checked()
    except Exception:  # noqa: BLE001 - a bad scenario is refused elsewhere, naming its parameter
        return None
    if isinstance(cfg, str):
        cfg = json.loads(cfg)
    rates: dict[tuple[str, str], float] = {}
    for link in cfg.get("links", []):
        rates[(link["a"], link["b"])] = rates[(link["b"], link["a"])] = float(link["rate_bps"])
    frame = float(m.defaults.frame_bytes)
    kept = min(frame, float(t.snaplen)) + _EPB_OVERHEAD
    start = t.from_ms
    end = min(scenario.duration_ms, t.to_ms if t.to_ms is not None else scenario.duration_ms)
    ms = max(0.0, end - start)
    total_per_ms = 0.0
    ports = 0
    for p in dict.fromkeys(t.pcap):
        a, _, b = p.partition("->")
        rate = rates.get((a.strip(), b.strip()))
        if rate is None:
            continue
        ports += 1
        total_per_ms += rate / 8 / frame * kept / 1000
    return {
        "bytes": total_per_ms * ms * len(scenario.seeds),
        "per_port_ms": total_per_ms / max(ports, 1),
        "ports": ports,
        "ms": ms,
        "cap": t.pcap_max_bytes,
    }


def cap_warnings(per_seed: dict[int, dict[str, Any]]) -> list[str]:
    """One line per seed whose event trace stopped at its row cap, or whose
    captures stopped at their byte cap."""
    out = []
    for seed, t in sorted(per_seed.items()):
        at = t.get("capped_at_ps")
        if at is not None:
            out.append(
                f"trace.max_rows: seed {seed}'s events.parquet holds its first {t['rows']:,} rows, up to "
                f"{at / 1e9:g} ms; the later events were not recorded (narrow trace.events or its "
                "filters, or raise trace.max_rows)"
            )
        at = t.get("pcap_capped_at_ps")
        if at is not None:
            out.append(
                f"trace.pcap_max_bytes: seed {seed}'s captures hold their first {t['pcap_max_bytes']:,} bytes, "
                f"up to {at / 1e9:g} ms; the later frames were not captured (narrow trace.pcap or "
                "trace.from_ms / to_ms, or raise trace.pcap_max_bytes)"
            )
    return out
