"""The transient study's other cases: what cnsim gives where the source ran
more than references.md section 4 keeps (docs/calibration.md section 4).

    python scripts/transient_cases.py [--seeds 10]

Runs BCN and BCN-Max with PAUSE, 10 seeds each (about 3 minutes on two
cores), for: the published 2% sampling; 5% and 10% sampling throughout;
oversampling (2% below Qsc, 10 / 20 / 30% at or above it); the wider
Qoffset (-Qeq, +2 Qeq) and Qdelta (+-4 Qeq) ranges; 75 KB per port
(`multihop_transient_75kb`). Prints one markdown row per case and scheme:
the published knee where the source gives one, `transient_ms` (the knee of
the seeds' mean curve) in ms and RTTs, the knee of each seed's own curve
(median and quartiles) and the settling time (docs/calibration.md, issue 29).
"""

from __future__ import annotations

import argparse

import cnsim

#: case -> (scenario, overrides); the scenarios and parameters are the shipped ones.
CASES: dict[str, tuple[str, dict[str, object]]] = {
    "2% sampling (published: BCN 462 ms, BCN-Max 52 ms)": ("multihop_transient", {}),
    "5% sampling": ("multihop_transient", {"bcn.sample_bytes": 30_000.0}),
    "10% sampling": ("multihop_transient", {"bcn.sample_bytes": 15_000.0}),
    **{
        f"oversampling: 2%, {pct}% at or above Qsc": (
            "multihop_transient",
            {"bcn.oversampling": True, "bcn.sample_sev_bytes": 1500.0 * 100 / pct},
        )
        for pct in (10, 20, 30)
    },
    "Qoffset (-Qeq, +2 Qeq), Qdelta (-4 Qeq, +4 Qeq)": (
        "multihop_transient",
        {"bcn.qoff_hi_qeq": 2.0, "bcn.qdelta_range_qeq": 4.0},
    ),
    "75 KB per port": ("multihop_transient_75kb", {}),
}


#: (case, scheme) -> the source's published knee (ms): references.md section 4 and issue 29.
PUBLISHED: dict[tuple[str, str], float] = {
    ("2% sampling (published: BCN 462 ms, BCN-Max 52 ms)", "bcn"): 462.0,
    ("2% sampling (published: BCN 462 ms, BCN-Max 52 ms)", "bcnmax"): 52.0,
    ("5% sampling", "bcnmax"): 52.0,
    ("10% sampling", "bcnmax"): 38.0,
    ("Qoffset (-Qeq, +2 Qeq), Qdelta (-4 Qeq, +4 Qeq)", "bcnmax"): 274.0,
}


def cell(agg: dict[str, float | None]) -> str:
    knee, settle = agg.get("transient_ms"), agg.get("settling_ms")
    rtts = agg.get("transient_rtts")
    med, q1, q3 = (agg.get(f"transient_rep_{k}_ms") for k in ("median", "q1", "q3"))
    s = "not settled" if settle is None else f"{settle:.0f}"
    return f"{knee:.0f} ({rtts:.1f} RTTs) | {med:g} ({q1:g}-{q3:g}) | {s}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=None, help="threads (default: all cores)")
    args = ap.parse_args()
    print(
        "| case | scheme | published knee (ms) | knee of the mean (ms) | per-seed knees: median (quartiles) | settling (ms) |"
    )
    print("|---|---|---|---|---|---|")
    for case, (name, sets) in CASES.items():
        base = cnsim.load(name, seeds=list(range(args.seeds))).replace(**sets)
        for s in ("bcn", "bcnmax"):
            agg = cnsim.run(base.replace(scheme=s), progress=False, jobs=args.jobs).aggregates()
            pub = PUBLISHED.get((case, s))
            print(f"| {case} | {s} | {'' if pub is None else f'{pub:g}'} | {cell(agg)} |", flush=True)


if __name__ == "__main__":
    main()
