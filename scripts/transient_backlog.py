"""The transient study's hot backlog, BCN-Max with PAUSE at 2%, 5% and 10%
sampling (docs/calibration.md, "BCN-Max's transient beyond the headline").

    python scripts/transient_backlog.py [--seeds 4] [--scheme bcnmax]

Runs `multihop_transient` for 200 ms (the hotspot from 50 ms) and prints,
per case and seed, in ms after the onset and KB:

- the hot output queue ST0->N7 at its peak (1 ms bins' maxima), ST0's
  whole memory at that time, and the bound per-ingress PAUSE puts on the hot
  queue: three inputs feed it (CS, N8, N9), each held to XOFF plus the
  headroom of one pause;
- the hot bytes in the network (frames to N7 that left their source's link
  and not yet ST0->N7), at their peak; when the hot sources together send
  under the hot port's 0.5 Gbit/s (5 ms mean) and when that backlog is
  under 300 KB again;
- the last ms with PAUSE on CS->ST0 (ST0's CS input), ST1->CS and N1->ST1,
  and whether N8 or N9 (ST0's local inputs) were paused at all.
"""

from __future__ import annotations

import argparse
import warnings

import cnsim
import numpy as np
import polars as pl
from cnsim.scenario.engine_config import pause_headroom_bytes

CASES: dict[str, dict[str, object]] = {
    "2%": {},
    "5%": {"bcn.sample_bytes": 30_000.0},
    "10%": {"bcn.sample_bytes": 15_000.0},
}
ONSET_MS = 50
END_MS = 200.0
#: Each source's link into the network, and the hot port.
SOURCES = ["N1->ST1", "N2->ST1", "N3->ST1", "N4->ST2", "N5->ST2", "N6->ST2", "N8->ST0", "N9->ST0", "N10->CS"]
HOT = "ST0->N7"
ST0_OUT = ["ST0->N7", "ST0->N8", "ST0->N9", "ST0->CS"]


def series(ts: pl.DataFrame, name: str, key: str) -> np.ndarray:
    sel = ts.filter((pl.col("series") == name) & (pl.col("key") == key)).sort("time_ms")
    return sel["value"].to_numpy()


def last_paused(ts: pl.DataFrame, key: str) -> int | None:
    x = series(ts, "paused_fraction", key)
    on = np.nonzero(x[ONSET_MS:] > 0)[0] if len(x) else []
    return int(on[-1]) if len(on) else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--scheme", default="bcnmax")
    args = ap.parse_args()
    warnings.simplefilter("ignore", cnsim.ScenarioWarning)  # the 200 ms run clips the hotspot window
    m = cnsim.load("multihop_transient").model
    per_input = m.pause.xoff_bytes + pause_headroom_bytes(m, 1)
    print(
        f"Bound on ST0->N7 under per-ingress PAUSE: 3 inputs x (XOFF {m.pause.xoff_bytes / 1e3:g} KB + headroom)"
        f" = {3 * per_input / 1e3:.0f} KB of ST0's {m.bridge.buffer_bytes / 1e3:g} KB\n"
    )
    print(
        "| case | seed | ST0->N7 peak (KB) | ST0 memory then | hot bytes in the network, peak"
        " | hot sources < 0.5 Gbit/s from | hot backlog < 300 KB from"
        " | last PAUSE CS->ST0 / ST1->CS / N1->ST1 | N8, N9 paused |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for case, sets in CASES.items():
        sc = cnsim.load("multihop_transient", seeds=list(range(args.seeds))).replace(
            scheme=args.scheme,
            duration_ms=END_MS,
            **{
                "measure.end_ms": END_MS,
                "hotspot.end_ms": END_MS,
                "trace.ports": ST0_OUT,
                "trace.events": ["dequeue"],
                "trace.event_ports": [*SOURCES, HOT],
            },
            **sets,
        )
        res = cnsim.run(sc, progress=False)
        for seed in res.seeds:
            ts = res.timeseries(seed=seed)
            hot_max = series(ts, "queue_bytes_max", HOT)
            peak_ms = int(np.argmax(hot_max))
            st0 = sum(series(ts, "queue_bytes", p) for p in ST0_OUT)
            ev = res.events(seed).filter(pl.col("flow").str.ends_with("|N7"))
            bins = np.arange(0.0, END_MS + 1.0) * 1000.0  # 1 ms, in us
            out = ev.filter(pl.col("port") != HOT)
            done = ev.filter(pl.col("port") == HOT)
            sent = np.histogram(out["time_us"].to_numpy(), bins, weights=out["bytes"].to_numpy())[0]
            drained = np.histogram(done["time_us"].to_numpy(), bins, weights=done["bytes"].to_numpy())[0]
            backlog = np.cumsum(sent - drained)
            b_peak = int(np.argmax(backlog[:150]))
            under = np.nonzero(backlog[b_peak:] < 300e3)[0]
            rate = np.convolve(sent * 8 / 1e6, np.ones(5) / 5, mode="valid")  # Gbit/s, 5 ms mean
            cut = np.nonzero(rate[ONSET_MS:] < 0.5)[0]
            lp = [last_paused(ts, k) for k in ("CS->ST0", "ST1->CS", "N1->ST1")]
            local = [k for k in ("N8->ST0", "N9->ST0") if last_paused(ts, k) is not None]

            def ms(x: int | None) -> str:
                return "-" if x is None else str(x)

            print(
                f"| {case} | {seed} | {hot_max[peak_ms] / 1e3:.0f} at {peak_ms - ONSET_MS} ms"
                f" | {st0[peak_ms] / 1e3:.0f} | {backlog[b_peak] / 1e3:.0f} at {b_peak - ONSET_MS} ms"
                f" | {ms(int(cut[0]) if len(cut) else None)} | {ms(b_peak + int(under[0]) - ONSET_MS if len(under) else None)}"
                f" | {' / '.join(ms(x) for x in lp)} | {', '.join(local) or 'no'} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
