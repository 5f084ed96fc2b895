"""The event trace and packet captures of a run (docs/looking-at-frames.md).

A scenario asks for them in `[trace]` (`events = [...]` with its filters,
`pcap = ["FROM->TO", ...]`). The engine writes them itself while it runs,
each seed into the run's trace directory:

- `events.seed<K>.parquet`: that seed's rows, a row group at a time;
- `pcap/<FROM>-to-<TO>.seed<K>.pcapng`: one capture per port and seed.

`cnsim run --out DIR` gives the engine the results directory's temporary
sibling, so the captures are written where they stay; `cnsim.run(sc)`
without a directory gives it a temporary directory that lives as long as
the Results (`trace_dir=` keeps it elsewhere). Saving the results
(`Results.write` / `save`, `cnsim run`) concatenates the seeds' event files
into `DIR/events.parquet` (streamed, never all rows in memory; a `seed`
column tells them apart) and puts the captures in `DIR/pcap/`;
`cnsim.open_results(DIR).events()` reads them back."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # polars is imported when the events are read, not by every run
    import polars as pl

#: The merged event trace of a results directory, and its captures' directory.
EVENTS_FILE = "events.parquet"
PCAP_DIR = "pcap"


class TraceCapWarning(UserWarning):
    """A seed's event trace reached `trace.max_rows`: its later events were not recorded."""


def records(scenario: Any) -> bool:
    """Whether `scenario` asks for an event trace or a capture."""
    t = scenario.model.trace
    return bool(t.events or t.pcap)


def staging_dir() -> Path:
    """A new temporary directory for a run's trace (`cnsim.run` without `trace_dir`)."""
    return Path(tempfile.mkdtemp(prefix="cnsim-trace-"))


class TraceFiles:
    """Where a run's trace is: the per-seed files the engine wrote into
    `root` (`per_seed`: each seed's summary from the engine), or the merged
    files of a results directory (`per_seed` None). A temporary `root` the
    run made for itself is removed with this object (`owned`)."""

    def __init__(self, root: Path, per_seed: dict[int, dict[str, Any]] | None, owned: bool = False) -> None:
        self.root = Path(root)
        self.per_seed = per_seed
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

    def scan_events(self, seed: int | None = None) -> pl.LazyFrame | None:
        """The events as a polars LazyFrame (in the order the engine recorded
        them), or None when the run recorded no event."""
        src = self._event_sources(None if seed is None else [seed])
        if not src:
            return None
        import polars as pl

        lf = pl.scan_parquet(src)
        return lf if seed is None else lf.filter(pl.col("seed") == seed)

    def events(self, seed: int | None = None) -> pl.DataFrame:
        """The events of every seed (or of `seed`), sorted by seed and time;
        events at the same time keep the order they happened in."""
        import polars as pl

        lf = self.scan_events(seed)
        if lf is None:
            return pl.DataFrame()
        return lf.collect().sort(["seed", "time_ps"], maintain_order=True)

    def pcap_files(self, seed: int | None = None) -> list[Path]:
        """The captures (one per port and seed), sorted by name."""
        d = self.root / PCAP_DIR
        if not d.is_dir():
            return []
        pattern = "*.pcapng" if seed is None else f"*.seed{seed}.pcapng"
        return sorted(d.glob(pattern))

    def summary(self) -> dict[str, Any]:
        """What summary.json says of the trace: rows per seed, the seeds
        whose event trace reached its row cap (and when), the captures."""
        per = self.per_seed or {}
        return {
            "events": EVENTS_FILE if any(t.get("events_file") for t in per.values()) else None,
            "rows": {str(s): t.get("rows", 0) for s, t in sorted(per.items())},
            "capped_at_ps": {
                str(s): t["capped_at_ps"] for s, t in sorted(per.items()) if t.get("capped_at_ps") is not None
            },
            "max_rows": next((t.get("max_rows") for t in per.values()), None),
            "pcap": [
                f"{PCAP_DIR}/{Path(p['file']).name}"
                for _, t in sorted(per.items())
                for p in t.get("pcap", [])
            ],
        }

    # ------------------------------------------------------------- writing
    def write(self, out: Path, seeds: list[int], identity: dict[str, str] | None = None) -> None:
        """Puts the trace of `seeds` into results directory `out`:
        `events.parquet` (the seeds' files concatenated, streamed, with the
        run's `identity` in its footer, as every Parquet file of a results
        directory has) and `pcap/`. When `out` is this trace's own
        directory, the per-seed event files (and any of a seed that did not
        finish) are removed."""
        out = Path(out)
        identity = identity or {}
        if self.per_seed is None:  # a saved directory: copy it as it is
            if out.resolve() != self.root.resolve():
                if (self.root / EVENTS_FILE).is_file():
                    shutil.copy2(self.root / EVENTS_FILE, out / EVENTS_FILE)
                if (self.root / PCAP_DIR).is_dir():
                    shutil.copytree(self.root / PCAP_DIR, out / PCAP_DIR, dirs_exist_ok=True)
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
        for p in self.pcap_files():
            seed = int(p.name.rsplit(".seed", 1)[1].split(".")[0])
            if same:
                if seed not in seeds:
                    p.unlink()
            elif seed in seeds:
                (out / PCAP_DIR).mkdir(exist_ok=True)
                shutil.copy2(p, out / PCAP_DIR / p.name)
        if same:
            for p in self.root.glob("events.seed*.parquet"):
                p.unlink()
            # From now on the merged file is the trace.
            self.per_seed = {s: t for s, t in self.per_seed.items() if s in seeds}


def _footer(path: str | Path, keys: Any) -> dict[str, str | None]:
    """The values of `keys` in a Parquet file's footer (None: absent)."""
    import polars as pl

    kv = pl.read_parquet_metadata(path)
    return {k: kv.get(k) for k in keys}


def _pcap_comment(path: Path) -> dict[str, str]:
    """The `key=value; ...` pairs of a pcapng file's section header comment
    (the run and seed cnsim wrote it for); {} if it has none."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8 or head[:4] != b"\x0a\x0d\x0d\x0a":
            raise ValueError("not a pcapng file")
        length = int.from_bytes(head[4:8], "little")
        if not 28 <= length <= 1 << 16:
            raise ValueError("a damaged section header")
        body = f.read(length - 8)
    i, out = 16, {}  # after the byte-order magic, version and section length
    while i + 4 <= len(body) - 4:
        code, n = int.from_bytes(body[i : i + 2], "little"), int.from_bytes(body[i + 2 : i + 4], "little")
        if code == 0:
            break
        if code == 1:  # opt_comment
            for part in body[i + 4 : i + 4 + n].decode("utf-8", "replace").split("; "):
                k, _, v = part.partition("=")
                out[k] = v
        i += 4 + (n + 3) // 4 * 4
    return out


def check_identity(root: Path, ident: dict[str, str]) -> None:
    """Refuses a results directory whose events.parquet or captures were
    written by another run than its summary.json's `ident` (scenario
    SHA-256 and seeds), naming the file: the check every other file of the
    directory gets when it is read (cnsim.results)."""
    from .errors import ScenarioError
    from .runid import RUN_SEEDS, RUN_SHA256, mismatch

    events = Path(root) / EVENTS_FILE
    if events.is_file():
        try:
            got = _footer(events, ident)
        except Exception as e:  # a damaged file: name it
            raise ScenarioError(
                f"{events}: cannot be read ({type(e).__name__}); the results directory is damaged"
            ) from None
        why = mismatch(events, got, ident)
        if why is not None:
            raise ScenarioError(why)
    seeds = {str(s) for s in json.loads(ident[RUN_SEEDS])}
    for p in sorted((Path(root) / PCAP_DIR).glob("*.pcapng")):
        try:
            c = _pcap_comment(p)
        except (OSError, ValueError) as e:
            raise ScenarioError(f"{p}: cannot be read ({e}); the results directory is damaged") from None
        if c.get(RUN_SHA256) != ident[RUN_SHA256] or c.get("cnsim.seed") not in seeds:
            raise ScenarioError(
                f"{p}: not captured by this directory's run (scenario SHA-256 {ident[RUN_SHA256][:12]}..., "
                f"seeds {ident[RUN_SEEDS]}); the results directory is mixed"
            )


def unintended(scenario: Any) -> list[str]:
    """Trace settings that are legal but almost certainly not meant: one line each."""
    t = scenario.model.trace
    out = []
    filters = [k for k in ("event_nodes", "event_ports", "event_flows") if getattr(t, k)]
    if filters and not t.events:
        out.append(f"trace.{filters[0]}: set, but trace.events is empty, so no event is recorded")
    if records(scenario) and t.from_ms >= scenario.duration_ms:
        out.append(
            f"trace.from_ms: {t.from_ms:g} ms is not before the run's end (duration_ms = "
            f"{scenario.duration_ms:g}); nothing will be recorded"
        )
    return out


def cap_warnings(per_seed: dict[int, dict[str, Any]]) -> list[str]:
    """One line per seed whose event trace stopped at its row cap."""
    out = []
    for seed, t in sorted(per_seed.items()):
        at = t.get("capped_at_ps")
        if at is not None:
            out.append(
                f"trace.max_rows: seed {seed}'s events.parquet holds its first {t['rows']:,} rows, up to "
                f"{at / 1e9:g} ms; the later events were not recorded (narrow trace.events or its "
                "filters, or raise trace.max_rows)"
            )
    return out
