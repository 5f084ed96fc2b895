"""htsim's figures on the shared incasts (../shared/bench/README.md, "Peer
figures: N-to-1 incasts under one 100 Gbit/s switch"; htsim = Broadcom/
csg-htsim at 841d9e7) as regression tests. Where cnsim differs on purpose
(DCTCP's marking, first alpha and slow-start exit; htsim's HPCC on long
flows) docs/schemes.md says why; those rows are checked against htsim with
htsim's own choices, or not at all.

Tolerances: FCTs (mean, p99, max) within 3% and peak queues within 3%,
the agreement issue 25 reports for these workloads; htsim counts XOFFs
(PAUSE frames with non-zero quanta) and cnsim counts every PAUSE frame,
each XOFF here followed by its XON (no pause lasts half a pause time, so
none is refreshed): 2 x htsim's XOFF count, exactly."""

from __future__ import annotations

from typing import Any

import cnsim
import numpy as np
import polars as pl
import pytest
from cnsim.scenario import Scenario

#: (scheme, senders, frames each) -> (FCT mean, p99, max in us; peak queue KB or None; XOFF or None).
HTSIM: dict[tuple[str, int, int], tuple[float, float, float, float | None, int | None]] = {
    ("nocm", 8, 44): (47.9, 48.4, 48.4, 463.5, 8),
    ("nocm", 8, 700): (654.6, 677.7, 678.1, 702.0, 88),
    ("nocm", 16, 44): (89.7, 90.6, 90.6, 991.5, 16),
    ("nocm", 16, 700): (1312.4, 1350.1, 1350.1, 1482.0, 176),
    ("hpcc", 8, 44): (47.9, 48.4, 48.4, 463.5, 8),
    ("hpcc", 16, 44): (89.7, 90.6, 90.6, 991.5, 16),
    ("swift", 8, 44): (43.9, 44.4, 44.4, None, None),
    ("swift", 8, 700): (673.5, 674.1, 674.1, None, None),
    ("swift", 16, 44): (85.7, 86.6, 86.6, None, None),
    ("swift", 16, 700): (1342.7, 1346.1, 1346.1, None, None),
    # htsim's DCTCP FCTs less its 3.64 us SYN handshake (cnsim has none).
    ("dctcp", 8, 700): (659.1, 676.8, 677.0, 118.5, None),
    ("dctcp", 16, 700): (1330.0, 1351.9, 1352.7, 249.0, None),
}

#: htsim's Swift constants (compiled in) and DCTCP's choices.
HTSIM_SWIFT = {"base_target_us": 20.0, "per_hop_us": 3.053, "fs_range_us": 100.0}
HTSIM_DCTCP = {"mark_at": "dequeue", "alpha_init": 0.0, "slow_start_exit": "ssthresh"}


def incast(scheme: str, n: int, frames: int, **tables: dict[str, Any]) -> Scenario:
    """The shared incast (sp_inc_hpcc.toml): one 100 Gbit/s leaf, senders
    H1..Hn to H0 from time 0, no switch latency, a 64 MB shared buffer; 3 us
    links and PFC (ingress, XOFF 21,540 / XON 17,232 B) for no CC and HPCC,
    1 us links and no PFC for Swift and DCTCP."""
    lossless = scheme in ("nocm", "hpcc")
    raw: dict[str, Any] = {
        "name": f"xval-{scheme}-{n}x{frames}",
        "duration_ms": 50.0,
        "seeds": 1,
        "bin_us": 1.0,
        "scheme": scheme,
        "topology": {
            "generator": "leafspine",
            "leaves": 1,
            "spines": 1,
            "hosts_per_leaf": n + 1,
            "host_gbps": 100.0,
            "spine_gbps": 100.0,
        },
        "workload": {
            "kind": "incast",
            "fan_in": n,
            "receiver": "H0",
            "size_bytes": frames * 1500,
            "start_ms": 0.0,
        },
        "defaults": {
            "frame_bytes": 1500,
            "control_frame_bytes": 64,
            "link_delay_us": 3.0 if lossless else 1.0,
        },
        "bridge": {"buffer_mode": "shared", "buffer_bytes": 64_000_000, "latency_us": 0.0},
        "station": {"processing_us": 0.0},
        "pause": {"enabled": lossless, "xoff_bytes": 21540, "xon_bytes": 17232},
        "trace": {"ports": ["L0->H0"]},
    }
    raw.update(tables)
    return Scenario(raw)


def figures(sc: Scenario) -> tuple[float, float, float, float, float]:
    res = cnsim.run(sc, progress=False)
    fct = res.flows["fct_us"].to_numpy()
    assert len(fct) == sc.model.workload.fan_in and not np.isnan(fct).any()  # type: ignore[union-attr]
    peak = res.timeseries("queue_bytes_max").filter(pl.col("key") == "L0->H0")["value"].max()
    pause = res.summary_dict()["metrics"]["pause_frames"]["mean"]
    return float(fct.mean()), float(np.percentile(fct, 99)), float(fct.max()), float(peak) / 1000, pause


@pytest.mark.parametrize("case", list(HTSIM), ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}")
def test_the_incast_agrees_with_htsim(case: tuple[str, int, int]) -> None:
    scheme, n, frames = case
    tables: dict[str, Any] = {"swift": HTSIM_SWIFT} if scheme == "swift" else {}
    mean, p99, top, peak, pause = figures(incast(scheme, n, frames, **tables))
    h_mean, h_p99, h_max, h_peak, h_xoff = HTSIM[case]
    assert mean == pytest.approx(h_mean, rel=0.03)
    assert p99 == pytest.approx(h_p99, rel=0.03)
    assert top == pytest.approx(h_max, rel=0.03)
    if h_peak is not None and scheme != "dctcp":
        assert peak == pytest.approx(h_peak, rel=0.03)
    if h_xoff is not None:
        assert pause == 2 * h_xoff


@pytest.mark.parametrize("n", [8, 16])
def test_dctcp_peak_queue_with_htsims_choices(n: int) -> None:
    """DCTCP's peak queue differs from htsim's on purpose (docs/schemes.md,
    "DCTCP's options"): with the paper's enqueue marking and Linux's alpha
    of 1 it is 177 / 290 KB (8 / 16 senders of 700 frames) against htsim's
    118.5 / 249; with htsim's three choices (dequeue marking, alpha from 0,
    slow start ended without a cut) it is 111 / 228 KB, within 10% (htsim
    also cuts by alpha every window of data, marks or not, which cnsim does
    not)."""
    _, _, _, peak, _ = figures(incast("dctcp", n, 700, dctcp=HTSIM_DCTCP))
    h_peak = HTSIM[("dctcp", n, 700)][3]
    assert peak == pytest.approx(h_peak, rel=0.10)
    _, _, _, default_peak, _ = figures(incast("dctcp", n, 700))
    assert default_peak > 1.1 * h_peak, "the defaults mark on arrival: later feedback, a higher peak"
