"""Snapshot of every built-in scenario's results, for before/after diffs of
refactors that must not change a bit: every scenario with every scheme, PAUSE
on and off, a short run of seed 0 (and the scenario's own length for the
single-switch and multi-hop scenarios with their default scheme).

    python scripts/snapshot_metrics.py OUT.json
    python scripts/snapshot_metrics.py --diff BEFORE.json AFTER.json

Kept per run: every scalar metric, the aggregates across seeds, the frame
counts, the flows' and links' throughput per window, the links' time paused,
the nodes' counts and the binned series (every 50th bin); floats as their
exact repr. Wall-clock figures and the CI fields are left out."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

CI_FIELDS = {"std", "ci_low", "ci_high", "ci_half", "n"}


def _r(x):
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, dict):
        return {k: _r(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_r(v) for v in x]
    return x


def snapshot() -> dict:
    import cnsim
    from cnsim.metrics import flow_table, link_table
    from cnsim.scenario import builtin_names
    from cnsim.schemes import SCHEMES

    jobs = []
    for name in builtin_names():
        base = cnsim.load(name, seeds=[0])
        short = base.replace(duration_ms=min(base.duration_ms, 30.0))
        for scheme in SCHEMES:
            for pause in (False, True):
                jobs.append(
                    (f"{name} {scheme} pause={pause} 30ms", short.replace(scheme=scheme, pause=pause))
                )
        if name not in ("fattree_hotspot", "innocent"):
            jobs.append((f"{name} default full", base))

    def one(job):
        key, sc = job
        res = cnsim.run(sc, jobs=1, progress=False)
        r = res.runs[0]
        names = r.window_names
        flows = flow_table(r)
        links = link_table(r)
        frames = {k: v for k, v in r.frames.items() if k not in ("delay_sum_ps", "note_bytes_measure")}
        return key, {
            "metrics": _r(res.per_seed[0]),
            "aggregates": _r(res.aggregates()),
            "frames": _r(frames),
            "flows": _r(
                [
                    [f"{a}->{b}", [row[f"throughput_gbps_{n}"] for n in names]]
                    for a, b, row in zip(flows["src"], flows["dst"], flows.rows(), strict=True)
                ]
            ),
            "links": _r(
                [
                    [row["name"], [row[f"throughput_gbps_{n}"] for n in names], row["time_paused_pct"]]
                    for row in links.rows()
                ]
            ),
            "nodes": _r(
                r.tables["nodes"].select("name", "generated", "delivered", "dropped_cp", "dropped_rp").rows()
            ),
            "series": {
                f"{s}|{k}": _r([float(v) for v in vals[:: max(1, len(vals) // 50)]])
                for s, k, vals in r.series
            },
        }

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, jobs))


def diff(a: dict, b: dict) -> int:
    """Counts differing values; fields only in `b` (new ones) are listed, not counted."""
    bad = 0
    new: set[str] = set()
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            print(f"only in {'after' if key in b else 'before'}: {key}")
            bad += 1
            continue
        for part in sorted(set(a[key]) & set(b[key])):
            x, y = a[key][part], b[key][part]
            if isinstance(x, dict) and isinstance(y, dict):
                new |= {f"{part}.{k}" for k in set(y) - set(x)}
                y = {k: v for k, v in y.items() if k in x}
            if x != y:
                bad += 1
                if isinstance(x, dict) and isinstance(y, dict):
                    ks = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
                    print(
                        f"{key} / {part}: {len(ks)} differ, e.g. {[(k, x.get(k), y.get(k)) for k in ks[:3]]}"
                    )
                else:
                    print(f"{key} / {part} differs")
    if new:
        print(f"new fields (not compared): {', '.join(sorted(new))}")
    print(f"{len(a)} before, {len(b)} after, {bad} differences")
    return bad


if __name__ == "__main__":
    if sys.argv[1] == "--diff":
        a, b = (json.load(open(p)) for p in sys.argv[2:4])
        sys.exit(1 if diff(a, b) else 0)
    json.dump(snapshot(), open(sys.argv[1], "w"), indent=0, sort_keys=True)
