"""Signals and long engine calls on the command line: the first Ctrl-C or
SIGTERM stops a command cleanly (a KeyboardInterrupt: what finished is
kept), a second exits at once; an engine call runs on a worker thread so
that the main thread sees the signal at once."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any, NoReturn


def in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args)` on a worker thread while this (main) thread waits, so that
    Ctrl-C interrupts a long engine call at once (the engine itself cannot be
    interrupted: the process then exits without waiting for it)."""
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            box["error"] = e

    t = threading.Thread(target=target, daemon=True, name="cnsim-engine")
    t.start()
    while t.is_alive():
        t.join(0.1)
    if "error" in box:
        raise box["error"]
    return box["value"]


def on_signal(signum: int, frame: Any) -> None:
    """SIGINT / SIGTERM: the first stops the command cleanly (KeyboardInterrupt:
    finished seeds are kept), a second exits at once."""
    global _SIGNALS
    _SIGNALS += 1
    if _SIGNALS > 1:
        _stop_children()
        os._exit(130)
    raise KeyboardInterrupt


_SIGNALS = 0


def exit_now(code: int) -> None:
    """Exits without waiting for an engine call still running on a worker
    thread; child processes (`bench --workload scale`) are ended first."""
    _stop_children()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def finish(code: int) -> NoReturn:
    """Ends a command that has finished: runs the exit handlers (atexit:
    temporary directories, logging, ...), flushes what it printed and exits
    without the rest of the interpreter's teardown (a full garbage collection
    and every module's finalisation: 15-40 ms after a run, spent on objects
    about to vanish; every file the command wrote is closed by then). Only
    when nothing else of the process is running; otherwise a normal exit
    waits for it, as before: a thread that is not a daemon, a child process."""
    import atexit
    import threading

    main = threading.main_thread()
    busy = any(t is not main and not t.daemon for t in threading.enumerate())
    mp = sys.modules.get("multiprocessing")
    if busy or (mp is not None and mp.active_children()):
        sys.exit(code)
    atexit._run_exitfuncs()  # CPython's own call: what a normal exit runs first
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)  # a closed pipe: said as Python says it
    os._exit(code)


def _stop_children() -> None:
    scale = sys.modules.get("cnsim.benchscale")
    if scale is not None:
        scale.stop_children()


def install() -> None:
    """SIGINT and SIGTERM stop the command (on_signal)."""
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside: SIGTERM raises KeyboardInterrupt at once (a sweep keeps its
    finished points and stops the rest cleanly); the handler before is put back after."""

    def terminated(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
