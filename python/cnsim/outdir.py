"""Results directories, written safely.

A run's directory is checked before anything is simulated (can it be
created and written?), written into a temporary sibling and renamed into
place at the end, so that it is complete or absent whatever happens (a full
disk, a kill). An existing results directory is replaced whole, and only
with `force`; a directory that holds anything else (a scenario file, a
sweep, the user's files) is never written into. A lock beside it stops a
second run from writing the same directory. Default names come from a
sanitised scenario name and stay under ./results."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import ScenarioError

#: What a results directory may hold (Results.save, docs/results.md).
RESULT_FILES = {
    "scenario.toml",
    "summary.json",
    "flows.parquet",
    "pairs.parquet",
    "queues.parquet",
    "links.parquet",
    "nodes.parquet",
    "windows.parquet",
    "runs.parquet",
    "timeseries.parquet",
    "transient.parquet",
    "collectives.parquet",
    "iterations.parquet",
    "collective_ranks.parquet",
    "report.html",
    "point.json",
    "timing.json",
    "events.parquet",
    "pcap",
}
#: What a `cnsim fluid` directory may hold.
FLUID_FILES = {"fluid.json", "fluid.parquet", "fluid.png", "packet"}
#: What `cnsim compare-fidelity --out` writes.
FIDELITY_FILES = {"fidelity.json", "packet", "flow"}
_TMP = ".tmp-"
_OLD = ".old-"


def safe_name(name: str) -> str:
    """`name` as one path component: letters, digits, '.', '_' and '-' only,
    no leading dot, at most 80 characters ("scenario" if nothing is left)."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[:80]
    return s or "scenario"


def default_dir(name: str, kind: str = "") -> Path:
    """results/<name><kind>-<timestamp>-<random>, under the current
    directory: unique however many runs start in the same second."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"{safe_name(name)}{kind}-{stamp}-{os.urandom(3).hex()}"


class RunDir:
    """The target directory of one run, checked and locked; files are written
    into `tmp`, and `commit()` renames it into place."""

    def __init__(
        self,
        target: Path | str,
        force: bool = False,
        label: str = "--out",
        marker: str = "summary.json",
        allowed: set[str] = RESULT_FILES,
    ) -> None:
        self.target = Path(target)
        self.label = label
        self.tmp: Path | None = None
        self._lock: DirLock | None = None
        self._made: list[Path] = []  # parents this run created, removed again if it saves nothing
        where = f"{label} {self.target}"
        try:
            self._check(force, marker, allowed)
        except OSError as e:  # a name too long, a path through a file, no permission
            self.abort()
            raise ScenarioError(
                f"{where}: cannot be written ({e.strerror or e}); nothing was saved"
            ) from None
        except BaseException:
            self.abort()
            raise

    def _check(self, force: bool, marker: str, allowed: set[str]) -> None:
        t = self.target
        where = f"{self.label} {t}"
        if t.exists() and not t.is_dir():
            raise ScenarioError(f"{where}: exists and is not a directory")
        if t.is_dir():
            entries = [p for p in t.iterdir()]
            if (t / "sweep.json").exists():
                raise ScenarioError(f"{where}: holds a sweep (sweep.json); give another directory")
            others = sorted(
                p.name for p in entries if p.name not in allowed and not (p.suffix == ".png" and p.is_file())
            )
            if others:
                raise ScenarioError(
                    f"{where}: holds other files ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}); "
                    "not a results directory, so cnsim will not write into it"
                )
            if entries and not (t / marker).is_file():
                raise ScenarioError(
                    f"{where}: holds files but no {marker}; not a results directory, so cnsim will "
                    "not write into it"
                )
            if entries and not force:
                raise ScenarioError(
                    f"{where}: already holds results; give another directory, or --force to replace them"
                )
        parent = t.parent
        missing = [p for p in (parent, *parent.parents) if not p.exists()]
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            self._made = missing
            self.abort()
            raise ScenarioError(
                f"{where}: cannot be created ({e.strerror or e}); nothing was saved"
            ) from None
        self._made = missing
        self._lock = lock(parent / f".{t.name}.lock", f"{where}: another cnsim run is writing this directory")
        # Leftovers of a run of this directory that was killed while saving.
        for p in parent.glob(f"{_TMP}{t.name}-*"):
            shutil.rmtree(p, ignore_errors=True)
        for p in parent.glob(f"{_OLD}{t.name}-*"):
            shutil.rmtree(p, ignore_errors=True)
        try:
            self.tmp = parent / f"{_TMP}{t.name}-{os.urandom(4).hex()}"
            self.tmp.mkdir()
            probe = self.tmp / ".probe"
            probe.write_bytes(b"cnsim")
            probe.unlink()
        except OSError as e:
            self.abort()
            raise ScenarioError(
                f"{where}: cannot be written ({e.strerror or e}); nothing was saved"
            ) from None

    def save(self, write: Callable[[Path], Any]) -> Path:
        """Calls `write(tmp)` and puts the directory in place; whatever goes
        wrong, nothing is left. An operating-system error (a full disk, a
        file size limit, a name too long) becomes one ScenarioError naming
        the directory, the file and the cause."""
        try:
            assert self.tmp is not None
            write(self.tmp)
            return self.commit()
        except OSError as e:
            self.abort()
            raise ScenarioError(
                f"{self.label} {self.target}: cannot be written ({os_cause(e)}); nothing was saved"
            ) from None
        except BaseException:
            self.abort()
            raise

    def commit(self) -> Path:
        """Puts the written directory in place (replacing an old one whole)."""
        assert self.tmp is not None
        old = None
        if self.target.exists():
            old = self.target.parent / f"{_OLD}{self.target.name}-{os.urandom(4).hex()}"
            os.rename(self.target, old)
        os.rename(self.tmp, self.target)
        self.tmp = None
        self._made = []
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        self.close()
        return self.target

    def abort(self) -> None:
        """Removes what was written; the target is left as it was."""
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        self.close()
        for p in self._made:  # innermost first; only while empty
            with contextlib.suppress(OSError):
                p.rmdir()
        self._made = []

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def os_cause(e: OSError) -> str:
    """An operating-system error in a few words, with the file's name when it
    has one: 'flows.parquet: No space left on device'."""
    what = e.strerror or str(e) or type(e).__name__
    name = Path(e.filename).name if e.filename else ""
    if e.errno == errno.EFBIG:
        what += ", over the file size limit (ulimit -f)"
    return f"{name}: {what}" if name else what


def lock(path: Path, busy: str) -> DirLock:
    """Takes the lock file `path` or refuses with `busy` when another process
    holds it. Release it with `.release()`, which also removes the file."""
    return DirLock(path, busy)


class DirLock:
    """An exclusive lock on a file beside a results or sweep directory
    (flock, never waited for), removed when let go so nothing is left beside
    the results. The filelock package leaves the file, and removing it after
    a release races: a second process may hold a lock on the removed file
    while a third locks a new one. Here the file is removed while still held,
    and a lock taken on a file that was removed meanwhile is let go and taken
    again on the new one, so two processes never both hold it."""

    def __init__(self, path: Path, busy: str) -> None:
        self.path = path
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            return
        where = busy.partition(":")[0]
        while True:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise ScenarioError(
                    f"{where}: cannot be written ({e.strerror or e}); nothing was saved"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise ScenarioError(busy) from None
            except OSError:  # a filesystem without locks: go on unlocked
                pass
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except OSError:
                same = False
            if same:
                self._fd = fd
                return
            os.close(fd)

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()  # while still holding it: see the class
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def atomic_write(path: Path, data: str | bytes | Callable[[Path], None]) -> None:
    """Writes `path` whole or not at all: into a temporary file of a unique
    name beside it (two writers never share one), renamed over `path` at the
    end. `data`: text, bytes, or a function that writes the file it is
    given (a Parquet writer). The file gets the usual permissions (umask),
    not mkstemp's 0600."""
    import tempfile

    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    tmp = Path(name)
    try:
        if callable(data):
            os.close(fd)
            data(tmp)
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(e, OSError) and e.filename is None:
            e.filename = str(path)  # name the file (a write's error does not)
        raise
