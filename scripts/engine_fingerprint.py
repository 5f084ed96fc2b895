"""Fingerprints of the engine's raw results for every built-in scenario, for
catching a change to results that was not meant as a change to the model.

Each built-in scenario with every scheme, PAUSE off and on, seed 0, its first
`FINGERPRINT_MS` (the flow scenarios: whole runs), run by the engine alone
(no Python metrics, so the fingerprint does not move with numpy or polars);
the fingerprint is the SHA-256 of every counter and table buffer of
`results()` and of every binned series of `series()` (name, key and its
little-endian float64 values), wall-clock figures left out.

    python scripts/engine_fingerprint.py            # compare with tests/golden/engine_fingerprints.json
    python scripts/engine_fingerprint.py --write    # a model change: record the new fingerprints

The engine's floating point is deterministic, but it calls the C library's
`log` and `exp`, whose last bit may differ between libm builds and CPU
paths: the recorded fingerprints are this project's machine kind's (x86-64
with FMA, Debian 12's glibc), where CI runs.

`tests/test_golden.py` runs the comparison. A change that is meant to
move results (a model change) rewrites the file with `--write` and says
why in its commit message; anything else that moves a fingerprint is a bug.
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden" / "engine_fingerprints.json"
FINGERPRINT_MS = 20.0
#: Built-in scenarios fingerprinted at a smaller size than their own (a
#: benchmark of a thousand hosts would take minutes under every scheme).
SMALLER: dict[str, dict[str, Any]] = {
    "uet_fattree": {"topology.hosts": 16, "workload.file": "incast.cm"},
    "alltoall_fattree": {
        "topology.hosts": 16,
        "jobs": [
            {
                "name": "alltoall",
                "ranks": 16,
                "phases": [{"collective": "alltoall", "algorithm": "shift", "size_bytes": 1 << 20}],
            }
        ],
    },
    "allreduce_ring": {
        "jobs": [
            {
                "name": "allreduce",
                "ranks": 8,
                "phases": [{"collective": "allreduce", "size_bytes": 4 << 20, "chunk_bytes": 262144}],
            }
        ]
    },
    "training_two_jobs": {},
    # The HPCC paper's benchmark: 0.2 ms of its arrivals (its 100 ms are
    # tens of minutes a scheme).
    "hpcc_fattree": {"workload.end_ms": 0.2},
}


def _feed(h: Any, x: Any) -> None:
    """Hashes `x` in a fixed order: dict keys sorted, buffers as bytes."""
    if isinstance(x, dict):
        for k in sorted(x):
            if k == "engine":  # events and wall time: speed, not results
                continue
            h.update(k.encode())
            _feed(h, x[k])
    elif isinstance(x, (list, tuple)):
        h.update(b"[")
        for v in x:
            _feed(h, v)
        h.update(b"]")
    elif isinstance(x, (bytes, bytearray, memoryview)):
        h.update(bytes(x))
    elif hasattr(x, "tobytes"):  # numpy arrays
        h.update(str(x.dtype).encode())
        h.update(x.tobytes())
    else:
        h.update(repr(x).encode())


def fingerprint(sim: Any) -> str:
    """The SHA-256 of a finished run's results and time series."""
    import numpy as np

    h = hashlib.sha256()
    _feed(h, sim.results())
    h.update(b"series")
    for name, key, values in sim.series():
        h.update(name.encode() + b"\0" + key.encode() + b"\0")
        # The same bytes whether the binding hands over bytes or an array.
        raw = values if isinstance(values, bytes) else np.asarray(values, dtype="<f8").tobytes()
        h.update(len(raw).to_bytes(8, "little") + raw)
    return h.hexdigest()


def jobs() -> list[tuple[str, str]]:
    """(name, engine config) of every fingerprinted run."""
    import cnsim
    from cnsim.scenario import builtin_names
    from cnsim.schemes import SCHEMES

    out = []
    for name in builtin_names():
        base = cnsim.load(name, seeds=[0])
        if name in SMALLER:
            base = base.replace(**SMALLER[name])
        if base.model.fidelity != "packet":
            continue  # the packet model's fingerprints: flows_pods is flow-level (hours of packets)
        flows = name.startswith("flows_") or name in SMALLER
        with warnings.catch_warnings():  # shortened on purpose: the clipped windows are expected
            warnings.simplefilter("ignore", cnsim.ScenarioWarning)
            short = base if flows else base.replace(duration_ms=min(base.duration_ms, FINGERPRINT_MS))
        for scheme in SCHEMES:
            for pause in (False, True):
                try:
                    cfg = short.replace(scheme=scheme, pause=pause).engine_json()
                except Exception:  # a combination the scenario refuses
                    continue
                out.append((f"{name} {scheme} pause={pause}", cfg))
    return out


def fingerprints() -> dict[str, str]:
    from cnsim import _core

    def one(job: tuple[str, str]) -> tuple[str, str]:
        key, cfg = job
        sim = _core.Simulation(cfg, 0)
        sim.run()
        return key, fingerprint(sim)

    with ThreadPoolExecutor(2) as pool:
        return dict(sorted(pool.map(one, jobs())))


def compare(now: dict[str, str], golden: dict[str, str]) -> list[str]:
    """The runs whose fingerprints differ, appeared or disappeared."""
    return sorted(k for k in set(now) | set(golden) if now.get(k) != golden.get(k))


def main(argv: list[str]) -> int:
    now = fingerprints()
    if argv[:1] == ["--write"]:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(now, indent=1) + "\n")
        print(f"{len(now)} fingerprints written to {GOLDEN}")
        return 0
    bad = compare(now, json.loads(GOLDEN.read_text()))
    for k in bad:
        print(f"differs: {k}")
    print(f"{len(now)} runs, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
