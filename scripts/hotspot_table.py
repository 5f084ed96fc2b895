"""The July 2007 table for a hotspot scenario: every 2007 scheme at 2, 0.5
and 0 Gbit/s, with and without PAUSE, in the columns of references.md
section 3 (docs/calibration.md sections 4 and 5).

    python scripts/hotspot_table.py multihop_hotspot [--seeds 1]

`singlehop_hotspot` and `multihop_hotspot` take about 20 s on two cores with
one seed; `fattree_hotspot` about 5 minutes.
"""

from __future__ import annotations

import argparse

import cnsim

SCHEMES = ("nocm", "qcn2pt", "qcn3pt", "ecm")
RATES = (2.0, 0.5, 0.0)


def mean(metrics: dict, key: str) -> float:
    """A metric's mean over the seeds (0 when the run has none, e.g. no PAUSE)."""
    v = metrics.get(key)
    return 0.0 if v is None or v["mean"] is None else float(v["mean"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", choices=["singlehop_hotspot", "multihop_hotspot", "fattree_hotspot"])
    ap.add_argument("--seeds", type=int, default=1)
    args = ap.parse_args()
    print(
        "| hotspot | PAUSE | scheme | aggregate (Gbit/s) | hot port (Gbit/s) | paused % | dropped | overhead (Mbit/s) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    base = cnsim.load(args.scenario, seeds=list(range(args.seeds)))
    for pause in (True, False):
        for rate in RATES:
            for scheme in SCHEMES:
                sc = base.replace(scheme=scheme, pause=pause, **{"hotspot.rate_gbps": rate})
                m = cnsim.run(sc, progress=False).stats
                print(
                    f"| {rate:g} Gbit/s | {'on' if pause else 'off'} | {scheme} "
                    f"| {mean(m, 'aggregate_throughput'):.2f} | {mean(m, 'hot_port_throughput'):.2f} "
                    f"| {mean(m, 'time_paused_pct'):.2f} | {mean(m, 'dropped_cp'):,.0f} "
                    f"| {mean(m, 'overhead_mbps'):.3g} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
