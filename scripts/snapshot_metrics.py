"""Snapshot of every built-in scenario's results, for before/after diffs of
refactors that must not change a bit: every scenario with every scheme, PAUSE
on and off, a short run of seed 0 (and the scenario's own length for the
single-switch and multi-hop scenarios with their default scheme).

    python scripts/snapshot_metrics.py OUT.json
    python scripts/snapshot_metrics.py --diff BEFORE.json AFTER.json

Wall-clock figures are left out; everything else the engine and the metrics
report is kept, floats as their exact repr."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

WALL = {"wall_s", "events_per_s", "frames_delivered_per_s", "sim_speed", "version"}


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in WALL}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    if isinstance(x, float):
        return repr(x)
    return x


def snapshot() -> dict:
    import cnsim
    from cnsim.scenario import builtin_names
    from cnsim.schemes import SCHEMES

    jobs = []
    for name in builtin_names():
        base = cnsim.load(name, seeds=[0])
        short = base.replace(duration_ms=min(base.duration_ms, 30.0))
        for scheme in SCHEMES:
            for pause in (False, True):
                jobs.append((f"{name} {scheme} pause={pause} 30ms", short.replace(scheme=scheme, pause=pause)))
        if name not in ("fattree_hotspot", "innocent"):
            jobs.append((f"{name} default full", base))

    def one(job):
        key, sc = job
        res = cnsim.run(sc, jobs=1, progress=False)
        r = res.runs[0]
        series = {f"{s}|{k}": [repr(float(v)) for v in vals[:: max(1, len(vals) // 50)]] for s, k, vals in r.series}
        return key, {
            "metrics": _strip(res.per_seed[0]),
            "aggregates": _strip(res.aggregates()),
            "result": _strip(r.result),
            "series": series,
        }

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, jobs))


def diff(a: dict, b: dict) -> int:
    bad = 0
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            print(f"only in {'after' if key in b else 'before'}: {key}")
            bad += 1
            continue
        for part in ("metrics", "aggregates", "result", "series"):
            x, y = a[key].get(part), b[key].get(part)
            if x != y:
                bad += 1
                if isinstance(x, dict) and isinstance(y, dict):
                    ks = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
                    print(f"{key} / {part}: {len(ks)} differ, e.g. {ks[:5]}")
                else:
                    print(f"{key} / {part} differs")
    print(f"{len(a)} before, {len(b)} after, {bad} differences")
    return bad


if __name__ == "__main__":
    if sys.argv[1] == "--diff":
        a, b = (json.load(open(p)) for p in sys.argv[2:4])
        sys.exit(1 if diff(a, b) else 0)
    json.dump(snapshot(), open(sys.argv[1], "w"), indent=0, sort_keys=True)
