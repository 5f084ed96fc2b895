"""`cnsim check DIR`: what a results directory holds against what its
summary.json says the run wrote, file by file (docs/results.md).

summary.json lists every data file of the run (`files`: each Parquet file's
rows and bytes, events.parquet's rows and bytes, each capture's port, seed,
frames and bytes; `trace`: what the event trace and the captures recorded).
The check compares each with the file there: present, readable, written by
this run (the scenario's SHA-256 and the seeds in each Parquet footer and
each capture's section header comment; a capture's seed and port), of the
rows and bytes listed, not cut short; and names any file summary.json does
not list where only cnsim's files belong (`pcap/`). `cnsim.open_results`
and `cnsim report` open a directory only when it passes (they raise the
first problem); this module is the one implementation of that check.

A directory written before summary.json listed its files (no `files`) is
checked for what it can be: presence, identity, readability."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ScenarioError, ScenarioWarning
from .runid import RUN_SEEDS, RUN_SHA256, crc32, mismatch, sha256

#: summary.json's own CRC-32: of its text with this key null (`sealed_summary`).
SUMMARY_CRC = "crc32"


def sealed_summary(summary: dict[str, Any]) -> str:
    """summary.json's text: `summary` with its own CRC-32 (of the same text
    with `crc32` null), so that a value changed by hand or by damage is
    found before it is believed (`open_results` reads the seeds, the file
    list and the trace's record from it)."""
    import zlib

    body = {k: v for k, v in summary.items() if k != SUMMARY_CRC}
    crc = zlib.crc32(_summary_text({**body, SUMMARY_CRC: None}).encode())
    return _summary_text({**body, SUMMARY_CRC: crc})


def _summary_text(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2) + "\n"


#: Parquet files every run's directory has, and the columns each must have to be read back.
PARQUET_NEED: dict[str, tuple[str, ...]] = {
    "runs.parquet": ("seed", "bin_ps", "end_ps", "n_bins"),
    "windows.parquet": ("seed",),
    "flows.parquet": ("seed",),
    "links.parquet": ("seed",),
    "nodes.parquet": ("seed",),
    "timeseries.parquet": ("seed", "series", "key", "value"),
}
#: Parquet files a run may have besides (with transport flows, queue ports, `[transient]`).
PARQUET_OPTIONAL: dict[str, tuple[str, ...]] = {
    "pairs.parquet": ("seed",),
    "queues.parquet": ("seed", "port", "lower_bytes", "time_ps"),
    "transient.parquet": (),
}
#: Files cnsim writes that summary.json does not list: redrawn by `cnsim report`.
REDRAWN = ("report.html",)
#: Files of a sweep's point directory that are not the run's.
POINT_FILES = ("point.json",)


@dataclass
class FileCheck:
    """One file: what summary.json says (`expected`), what is there
    (`found`), and the problem when they disagree (one line naming the
    file), None when they agree."""

    name: str
    expected: str
    found: str
    problem: str | None = None


@dataclass
class DirCheck:
    """A results directory checked: one FileCheck per file listed or present."""

    path: Path
    title: str = ""
    files: list[FileCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: summary.json as read (None when it could not be).
    summary: dict[str, Any] | None = None
    #: The run every file must carry (None: an older directory, not checkable).
    ident: dict[str, str] | None = None
    #: Whether the trace's files (events.parquet, the captures) are read whole
    #: for their CRC-32 too (`cnsim check`); the tables' always are.
    full: bool = True
    #: The Results the full check reopened (to compare summary.json with), if any.
    results: Any = None

    @property
    def problems(self) -> list[str]:
        return [f.problem for f in self.files if f.problem]

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, name: str, expected: str, found: str, problem: str | None = None) -> None:
        self.files.append(FileCheck(name, expected, found, problem))

    def raise_first(self) -> None:
        """Raises the first problem as a ScenarioError (one line naming the file)."""
        if self.problems:
            raise ScenarioError(self.problems[0])


def _n(x: Any) -> str:
    return f"{x:,}" if isinstance(x, int) else str(x)


def _read_summary(d: DirCheck) -> dict[str, Any] | None:
    out = d.path
    path = out / "summary.json"
    if not path.is_file():
        d.add(
            "summary.json",
            "the run's description",
            "missing",
            f"{out}: not a results directory (no summary.json)",
        )
        return None
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError, UnicodeDecodeError) as e:
        d.add(
            "summary.json",
            "JSON",
            "unreadable",
            f"{path}: cannot be read ({e}); the results directory is damaged",
        )
        return None
    if not isinstance(saved, dict):
        d.add(
            "summary.json",
            "a JSON object",
            type(saved).__name__,
            f"{path}: not a cnsim summary (a JSON object); the results directory is damaged",
        )
        return None
    if not isinstance(saved.get("metrics"), dict) or not isinstance(saved.get("engine"), dict):
        d.add(
            "summary.json",
            "a cnsim summary",
            "other JSON",
            f"{path}: not a cnsim summary (no metrics and engine tables); the results directory is damaged",
        )
        return None
    # What this cnsim writes, every field of it (an older summary.json has
    # none of them: read with a note, checked for what it can be).
    trace = saved.get("trace")
    newer = [SUMMARY_CRC in saved, "files" in saved, isinstance(trace, dict) and "pcap_max_bytes" in trace]
    if any(newer) and not all(newer[:2]):
        d.add(
            "summary.json",
            "its CRC-32 and file list",
            "one of them",
            f"{path}: has no {'CRC-32' if SUMMARY_CRC not in saved else 'file list'}, which cnsim writes with "
            "the rest of it; the results directory is damaged",
        )
        return None
    if SUMMARY_CRC in saved:
        import zlib

        want = saved[SUMMARY_CRC]
        got = zlib.crc32(_summary_text({**saved, SUMMARY_CRC: None}).encode())
        if want != got:
            d.add(
                "summary.json",
                f"CRC-32 {want}",
                f"CRC-32 {got:08x}",
                f"{path}: changed since the run wrote it (its CRC-32 is not the one it records); "
                "the results directory is damaged",
            )
            return None
    for key in ("seeds", "seeds_requested"):
        v = saved.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            d.add(
                "summary.json",
                f"'{key}': a list of seeds",
                repr(v)[:40],
                f"{path}: '{key}' is not a list of seeds; the results directory is damaged",
            )
            return None
    for key in ("files", "trace"):
        if not isinstance(saved.get(key, {}), dict):
            d.add(
                "summary.json",
                f"'{key}': a table",
                type(saved.get(key)).__name__,
                f"{path}: '{key}' is not a table; the results directory is damaged",
            )
            return None
    trace = saved.get("trace") or {}
    pcap, rows = trace.get("pcap", []), trace.get("rows", {})
    if (
        not isinstance(pcap, list)
        or not all(isinstance(x, str) for x in pcap)
        or not isinstance(rows, dict)
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in rows.values())
    ):
        d.add(
            "summary.json",
            "'trace': captures and rows",
            "other",
            f"{path}: 'trace' does not list captures and rows; the results directory is damaged",
        )
        return None
    files = saved.get("files") or {}
    if not all(isinstance(v, dict) for v in files.values()):
        d.add(
            "summary.json",
            "'files': a table per file",
            "other",
            f"{path}: 'files' is not a table per file; the results directory is damaged",
        )
        return None
    d.add("summary.json", "the run's description", f"seeds {_seeds_text(saved.get('seeds'))}")
    return saved


def _seeds_text(seeds: Any) -> str:
    if not isinstance(seeds, list):
        return "?"
    if len(seeds) > 6:
        return f"[{', '.join(map(str, seeds[:3]))}, ..., {seeds[-1]}] ({len(seeds):,})"
    return str(seeds)


def check_results(path: str | Path, full: bool = True, reopen: Any = None) -> DirCheck:
    """Checks the run's results directory `path` file by file. Never raises
    for what it finds: see `DirCheck.problems`. `full`: also read the
    trace's files whole for their CRC-32 (the tables' are always read:
    `open_results` reads them anyway). `reopen(path, summary)`: the Results
    of a checked directory (cnsim.saved.read_checked), to compare
    summary.json's values with what the files give (`cnsim check`:
    cnsim.reopen.check)."""
    out = Path(path)
    d = DirCheck(out, full=full)
    if not out.is_dir():
        d.add(".", "a directory", "missing" if not out.exists() else "a file", f"{out}: not a directory")
        return d
    saved = _read_summary(d)
    d.summary = saved
    toml = out / "scenario.toml"
    if saved is None:
        return d
    d.title = (
        f"{saved.get('scenario', '?')} / {saved.get('scheme', '?')}{' + PAUSE' if saved.get('pause') else ''} / "
        f"{len(saved.get('seeds') or [])} seed(s)" + ("" if saved.get("complete", True) else " (interrupted)")
    )
    if not saved.get("complete", True):
        d.notes.append(
            f"the run was interrupted: {len(saved.get('seeds') or [])} of "
            f"{len(saved.get('seeds_requested') or [])} seeds finished (summary.json: complete = false)"
        )
    sha = saved.get("scenario_sha256")
    if not toml.is_file():
        d.add(
            "scenario.toml", "the scenario", "missing", f"{out}: not a results directory (no scenario.toml)"
        )
        return d
    try:
        text = toml.read_bytes()
    except OSError as e:
        d.add("scenario.toml", "the scenario", "unreadable", f"{toml}: cannot be read ({e.strerror or e})")
        return d
    if sha is None:
        d.notes.append(
            "written by an older cnsim (summary.json has no scenario_sha256): its files cannot be checked "
            "to be of one run"
        )
        d.add("scenario.toml", "the scenario", f"{len(text):,} bytes")
    elif sha256(text) != sha:
        d.add(
            "scenario.toml",
            f"SHA-256 {str(sha)[:12]}...",
            f"SHA-256 {sha256(text)[:12]}...",
            f"{toml}: not the scenario these results were run with (its SHA-256 is not summary.json's "
            "scenario_sha256); the results directory is mixed",
        )
        return d
    else:
        d.ident = {RUN_SHA256: sha, RUN_SEEDS: json.dumps(saved.get("seeds"))}
        d.add("scenario.toml", f"SHA-256 {sha[:12]}...", "agrees")
    files: dict[str, Any] = saved.get("files") or {}
    if not files:
        d.notes.append(
            "summary.json lists no files (written by an older cnsim): presence and identity checked"
        )
    _check_parquet(d, files)
    _check_timing(d)
    _check_trace(d, files)
    _check_others(d, files)
    if reopen is not None and d.ok and files:
        _check_summary(d, reopen)
    return d


def _check_summary(d: DirCheck, reopen: Any) -> None:
    """summary.json against what its tables give: the run reopened, its
    summary computed again, field by field (every value but the report's
    is derived from the files, to the last bit)."""
    path = d.path / "summary.json"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d.results = reopen(d.path, d.summary or {})
            got = d.results.summary_dict()
    except ScenarioError as e:
        d.add("summary.json", "its tables' summary", "unreadable", str(e))
        return
    saved = {k: v for k, v in (d.summary or {}).items() if k != SUMMARY_CRC}
    differ = _first_difference(saved, got)
    if differ is not None:
        d.add(
            "summary.json",
            "its tables' summary",
            f"differs at {differ}",
            f"{path}: {differ} is not what the run's files give; the results directory is damaged",
        )
    else:
        d.add("summary.json", "its tables' summary", "agrees")


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The dotted path of the first value that differs between `a` and `b`."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(dict.fromkeys([*a, *b])):
            if k not in a or k not in b:
                return f"{where}{k}"
            sub = _first_difference(a[k], b[k], f"{where}{k}.")
            if sub is not None:
                return sub
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            sub = _first_difference(x, y, f"{where[:-1]}[{i}].")
            if sub is not None:
                return sub
        return None
    same = isinstance(a, bool) == isinstance(b, bool) and a == b
    return None if same else (where[:-1] or "the whole")


def _parquet_facts(path: Path) -> tuple[int, list[str], dict[str, str]]:
    """(rows, columns, footer key-value metadata) of a Parquet file, from its footer."""
    import polars as pl

    kv = pl.read_parquet_metadata(path)
    cols = list(pl.read_parquet_schema(path))
    rows = pl.scan_parquet(path).select(pl.len()).collect().item()
    return rows, cols, kv


def _crc_problem(d: DirCheck, path: Path, listed: dict[str, Any] | None, whole: bool) -> str | None:
    """Why `path`'s bytes are not those summary.json lists (its CRC-32), or None."""
    want = (listed or {}).get("crc32")
    if want is None or not whole:
        return None
    got = crc32(path)
    if got != want:
        return f"{path}: its bytes are not those the run wrote (CRC-32 {got:08x}, not {want:08x}); the results directory is damaged"
    return None


def _one_parquet(
    d: DirCheck, name: str, need: tuple[str, ...], listed: dict[str, Any] | None, whole: bool = True
) -> None:
    out = d.path
    path = out / name
    expected = "listed: " + (
        f"{_n(listed.get('rows'))} rows, {_n(listed.get('bytes'))} bytes" if listed else "present"
    )
    if not path.is_file():
        d.add(name, expected, "missing", f"{out}: {name} is missing; not a complete results directory")
        return
    # The file summary.json lists, byte for byte (summary.json is sealed by its
    # own CRC): nothing more to ask of it. Otherwise its footer says why not.
    if (
        listed
        and whole
        and listed.get("crc32") is not None
        and listed.get("bytes") == path.stat().st_size
        and crc32(path) == listed["crc32"]
    ):
        d.add(
            name, expected, f"{_n(listed.get('rows'))} rows, {_n(listed.get('bytes'))} bytes, CRC-32 agrees"
        )
        return
    try:
        rows, cols, kv = _parquet_facts(path)
    except Exception as e:  # noqa: BLE001 - a damaged file: name it
        d.add(
            name,
            expected,
            "unreadable",
            f"{path}: cannot be read ({type(e).__name__}); the results directory is damaged",
        )
        return
    size = path.stat().st_size
    found = f"{rows:,} rows, {size:,} bytes"
    if d.ident is not None:
        why = mismatch(path, {k: kv.get(k) for k in d.ident}, d.ident)
        if why is not None:
            d.add(name, expected, found, why)
            return
    missing = [c for c in need if c not in cols]
    if missing:
        d.add(name, expected, found, f"{path}: has no column {missing[0]}; the results directory is damaged")
        return
    if listed:
        for what, want, got in (("rows", listed.get("rows"), rows), ("bytes", listed.get("bytes"), size)):
            if want is not None and want != got:
                d.add(
                    name,
                    expected,
                    found,
                    f"{path}: {got:,} {what}, not the {_n(want)} summary.json lists; the results directory is damaged",
                )
                return
    d.add(name, expected, found, _crc_problem(d, path, listed, whole))


def _check_parquet(d: DirCheck, files: dict[str, Any]) -> None:
    out = d.path
    listed = {n: v for n, v in files.items() if n.endswith(".parquet") and n != "events.parquet"}
    if listed:
        names = sorted(listed)
    else:  # an older directory: the files every run has, and the others when there
        names = sorted([*PARQUET_NEED, *(n for n in PARQUET_OPTIONAL if (out / n).exists())])
    for name in names:
        need = PARQUET_NEED.get(name, PARQUET_OPTIONAL.get(name, ()))
        _one_parquet(d, name, need, listed.get(name))
    # runs.parquet holds the seeds summary.json names.
    runs = out / "runs.parquet"
    if d.summary is not None and any(f.name == "runs.parquet" and f.problem is None for f in d.files):
        import polars as pl

        try:
            seeds = pl.read_parquet(runs, columns=["seed"])["seed"].to_list()
        except Exception as e:  # noqa: BLE001
            d.add("runs.parquet", "the seeds", "unreadable", f"{runs}: cannot be read ({type(e).__name__})")
            return
        if d.ident is not None and seeds != d.summary.get("seeds"):
            d.add(
                "runs.parquet",
                f"seeds {_seeds_text(d.summary.get('seeds'))}",
                f"seeds {_seeds_text(seeds)}",
                f"{runs}: seeds {_seeds_text(seeds)} are not summary.json's {_seeds_text(d.summary.get('seeds'))}; "
                "the results directory is damaged",
            )
    for p in sorted(out.glob("*.parquet")):
        if listed and p.name not in listed and p.name != "events.parquet":
            d.add(
                p.name,
                "not listed",
                "present",
                f"{p}: not one of the files summary.json lists; the results directory is mixed",
            )


def _check_timing(d: DirCheck) -> None:
    path = d.path / "timing.json"
    if not path.is_file():
        if d.ident is not None and d.summary is not None and d.summary.get("files"):
            d.add(
                "timing.json",
                "present",
                "missing",
                f"{d.path}: timing.json is missing; not a complete results directory",
            )
        return
    try:
        t = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError, UnicodeDecodeError) as e:
        d.add(
            "timing.json",
            "wall times",
            "unreadable",
            f"{path}: cannot be read ({e}); the results directory is damaged",
        )
        return
    seeds = (d.summary or {}).get("seeds") or []
    if (
        not isinstance(t, dict)
        or not isinstance(t.get("wall_s"), list)
        or len(t["wall_s"]) != len(seeds)
        or not all(x is None or (isinstance(x, int | float) and not isinstance(x, bool)) for x in t["wall_s"])
    ):
        d.add(
            "timing.json",
            f"{len(seeds)} wall times",
            "other",
            f"{path}: not a wall time per seed; the results directory is damaged",
        )
        return
    if d.ident is not None and (
        t.get("scenario_sha256") != d.ident[RUN_SHA256] or json.dumps(t.get("seeds")) != d.ident[RUN_SEEDS]
    ):
        d.add(
            "timing.json",
            "this run's",
            "another run's",
            f"{path}: from another run (scenario SHA-256 or seeds differ from summary.json's); "
            "the results directory is mixed",
        )
        return
    d.add("timing.json", f"{len(seeds)} wall times", "agrees")


def _check_trace(d: DirCheck, files: dict[str, Any]) -> None:
    from .trace import EVENTS_FILE, PCAP_DIR, TraceFiles, pcap_header

    out = d.path
    saved = d.summary or {}
    trace = saved.get("trace") or {}
    events = out / EVENTS_FILE
    if trace.get("events"):
        rows = trace.get("rows") or {}
        total = sum(v for v in rows.values() if isinstance(v, int)) if isinstance(rows, dict) else None
        listed = files.get(EVENTS_FILE) or ({"rows": total} if total is not None else None)
        _one_parquet(d, EVENTS_FILE, ("seed", "time_ps", "kind"), listed, d.full)
    elif events.exists():
        if saved.get("files"):
            d.add(
                EVENTS_FILE,
                "not listed",
                "present",
                f"{events}: summary.json lists no event trace; the results directory is mixed",
            )
        else:  # an older directory: checked as it is
            _one_parquet(d, EVENTS_FILE, ("seed", "time_ps", "kind"), None)
    tf = TraceFiles(out, None, saved=saved)
    caps = tf.captures() if (trace.get("pcap") is not None or (out / PCAP_DIR).is_dir()) else []
    seeds = {str(s) for s in saved.get("seeds") or []}
    for c in caps:
        _one_capture(d, c, seeds, pcap_header, older=trace.get("pcap") is None)
    names = {c["file"] for c in caps}
    pdir = out / PCAP_DIR
    if pdir.exists() and not pdir.is_dir():
        d.add(PCAP_DIR, "a directory", "a file", f"{pdir}: not a directory; the results directory is damaged")
        return
    if pdir.is_dir():
        for p in sorted(pdir.iterdir()):
            rel = f"{PCAP_DIR}/{p.name}"
            if rel not in names:
                d.add(
                    rel,
                    "not listed",
                    "present",
                    f"{p}: not one of the captures summary.json lists; the results directory is mixed",
                )


def _one_capture(d: DirCheck, c: dict[str, Any], seeds: set[str], header: Any, older: bool) -> None:
    out = d.path
    name = c["file"]
    path = out / name
    port, seed = c.get("port"), c.get("seed")
    expected = f"{port or '?'}, seed {seed}" + (
        f", {_n(c['frames'])} frames" if c.get("frames") is not None else ""
    )
    parts = Path(name).parts if isinstance(name, str) else ()
    if len(parts) != 2 or parts[0] != "pcap" or parts[1] in ("..", "."):
        d.add(
            str(name),
            expected,
            "?",
            f"{out / 'summary.json'}: lists a capture {name!r} outside pcap/; the results directory is damaged",
        )
        return
    if not path.is_file():
        d.add(name, expected, "missing", f"{out}: {name} is missing; not a complete results directory")
        return
    try:
        h = header(path)
    except (OSError, ValueError) as e:
        d.add(name, expected, "unreadable", f"{path}: cannot be read ({e}); the results directory is damaged")
        return
    found = f"{h['interface'] or '?'}, seed {h['comment'].get('cnsim.seed', '?')}, {h['bytes']:,} bytes"
    cm = h["comment"]
    if d.ident is not None and (
        cm.get(RUN_SHA256) != d.ident[RUN_SHA256] or cm.get("cnsim.seed") not in seeds
    ):
        d.add(
            name,
            expected,
            found,
            f"{path}: not captured by this directory's run (scenario SHA-256 {d.ident[RUN_SHA256][:12]}..., "
            f"seeds {_seeds_text(json.loads(d.ident[RUN_SEEDS]))}); the results directory is mixed",
        )
        return
    if seed is not None and cm.get("cnsim.seed") is not None and cm.get("cnsim.seed") != str(seed):
        d.add(
            name,
            expected,
            found,
            f"{path}: the capture of seed {cm.get('cnsim.seed')}, listed as seed {seed}'s; the results directory is mixed",
        )
        return
    if port is not None and h["interface"] is not None and h["interface"] != port:
        d.add(
            name,
            expected,
            found,
            f"{path}: the capture of port {h['interface']}, listed as {port}'s; the results directory is mixed",
        )
        return
    if not h["whole"]:
        d.add(
            name,
            expected,
            found,
            f"{path}: cut short (its last block is incomplete); the results directory is damaged",
        )
        return
    want = c.get("bytes")
    if want is not None and want != h["bytes"]:
        d.add(
            name,
            expected,
            found,
            f"{path}: {h['bytes']:,} bytes, not the {_n(want)} summary.json lists; the results directory is damaged",
        )
        return
    d.add(name, expected, found, _crc_problem(d, path, c, d.full))


def _check_others(d: DirCheck, files: dict[str, Any]) -> None:
    """What else is there: the report and its plots (redrawn by `cnsim
    report`, not listed), a sweep point's point.json; anything else is
    named as not cnsim's (not a problem: summary.json's files are whole)."""
    from .outdir import RESULT_FILES

    seen = {f.name for f in d.files}
    for p in sorted(d.path.iterdir()):
        if p.name in seen or p.name == "pcap" or p.name.startswith("."):
            continue
        if p.name in REDRAWN or (p.suffix == ".png" and p.is_file()):
            d.add(p.name, "the report (redrawn by cnsim report)", "present")
        elif p.name in POINT_FILES:
            d.add(p.name, "the sweep point's values", "present")
        elif p.name not in RESULT_FILES:
            d.notes.append(f"{p.name}: not a file cnsim writes (left as it is)")


def checked(path: str | Path) -> DirCheck:
    """`check_results(path)` as `open_results` needs it (the trace's files not
    read whole: they are read lazily), raising its first problem (a
    ScenarioError naming the file) and warning (ScenarioWarning) for a
    directory too old to check."""
    d = check_results(path, full=False)
    d.raise_first()
    for note in d.notes:
        if "older cnsim" in note:
            warnings.warn(f"{d.path}: {note}", ScenarioWarning, stacklevel=3)
    return d
