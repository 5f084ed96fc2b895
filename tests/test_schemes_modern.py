"""Today's schemes on whole runs (issue 25): TIMELY after losses and on long
paths, Swift's target on long paths, DCTCP's marking options, and the
engine's warnings about parameters the built network shows to be unintended."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import cnsim
import numpy as np
import polars as pl
import pytest
from cnsim.scenario import Scenario


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`cnsim ARGS...` in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "cnsim", *args], capture_output=True, text=True)


def long_lived(scheme: str, fan_in: int, duration_ms: float, **changes: Any) -> Scenario:
    """flows_incast with `fan_in` long-lived flows into H0, no PFC (the
    issue's reproducers: `--no-pause --set workload.kind=long_lived ...`)."""
    raw = cnsim.load("flows_incast").raw
    raw.update(scheme=scheme, duration_ms=duration_ms, pause={"enabled": False})
    raw["workload"].update(kind="long_lived", fan_in=fan_in, size_bytes=10**12)
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(raw.get(k), dict):
            raw[k].update(v)
        else:
            raw[k] = v
    return Scenario(raw)


def flat_stretches(res: Any, link: str = "L0->H0") -> list[tuple[str, float, float, float]]:
    """Every stretch of a traced sender's rate that stays flat for more than
    10 ms: (sender, start ms, length ms, the lowest 1-ms mean of the link
    inside it, Gbit/s)."""
    lk = res.timeseries("link_throughput").filter(pl.col("key") == link).sort("time_ms")
    lt, lv = lk["time_ms"].to_numpy(), lk["value"].to_numpy()
    per_ms = int(round(1.0 / (lt[1] - lt[0])))
    out = []
    rates = res.timeseries("rl_rate")
    for key in sorted(rates["key"].unique()):
        s = rates.filter(pl.col("key") == key).sort("time_ms")
        t, v = s["time_ms"].to_numpy(), s["value"].to_numpy()
        edges = np.concatenate([[0], np.flatnonzero(np.diff(v) != 0) + 1, [len(v)]])
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            if t[b - 1] - t[a] > 10.0:
                w = lv[(lt >= t[a]) & (lt <= t[b - 1])]
                n = len(w) // per_ms
                low = float(w[: n * per_ms].reshape(n, per_ms).mean(axis=1).min())
                out.append((key, float(t[a]), float(t[b - 1] - t[a]), low))
    return out


def link_gbps(res: Any, start_ms: float, link: str = "L0->H0") -> float:
    lk = res.timeseries("link_throughput").filter((pl.col("key") == link) & (pl.col("time_ms") >= start_ms))
    return float(lk["value"].mean())


SENDERS = [f"H{i}|H0" for i in range(1, 9)]


@pytest.mark.parametrize(
    ("buffer_bytes", "duration_ms", "settled_ms"),
    [(300_000, 50.0, 25.0), (4_000_000, 200.0, 50.0)],
)
def test_timely_senders_recover_after_losses_on_a_long_path(
    buffer_bytes: int, duration_ms: float, settled_ms: float
) -> None:
    """Issue 25's reproducers: eight long TIMELY flows, links of 25 us (a
    base RTT of 105.5 us), no PFC, a 300 KB or a 4 MB buffer. The incast
    overflows the buffer at the start; a sender cut to the floor just before
    a loss used to wait for its whole former window to be resent at 10
    Mbit/s before it updated again (0.01 Gbit/s for 45 ms, the link at 5.3
    Gbit/s), and with the 4 MB buffer a sender froze at 1.87 Gbit/s. Now no
    rate stays flat for 10 ms while the link has room, and once the losses
    are over the link is full (measured: 99.8% from 20 ms on with 300 KB,
    97.5% over 200 ms with 4 MB)."""
    sc = long_lived(
        "timely",
        8,
        duration_ms,
        defaults={"link_delay_us": 25.0},
        bridge={"buffer_bytes": buffer_bytes},
        trace={"ports": ["L0->H0"], "rate_limiters": SENDERS},
    )
    res = cnsim.run(sc, progress=False)
    assert res.summary_dict()["metrics"]["dropped_cp"]["mean"] > 0, "the incast overflows the buffer"
    assert set(res.timeseries("rl_rate")["key"]) == set(SENDERS)
    for key, start, length, link_low in flat_stretches(res):
        assert link_low > 9.5, f"{key} flat for {length:.1f} ms from {start:.1f} ms while the link had room"
    assert link_gbps(res, settled_ms) > 0.95 * 10.0


@pytest.mark.parametrize("fan_in", [2, 8])
def test_swift_fills_a_long_path_with_its_default_target(fan_in: int) -> None:
    """Links of 25 us (a base RTT of 105.5 us) and Swift's defaults: the
    target is derived from each flow's base RTT, so the flows fill the link
    with equal shares (each within 10% of C / N) and a queue near the 15 us
    of queueing the target allows above the base RTT (+ 2 hops x 1 us +
    flow scaling). With the former fixed target of 25 + 2 x 1 us, below the
    base RTT, each flow got 0.002-0.2 Gbit/s."""
    sc = long_lived(
        "swift",
        fan_in,
        30.0,
        defaults={"link_delay_us": 25.0},
        bridge={"buffer_mode": "per_output", "buffer_bytes": 4_000_000},
        measure={"start_ms": 10.0},
    )
    assert sc.engine_warnings() == []
    res = cnsim.run(sc, progress=False)
    link = res.links.filter(pl.col("name") == "L0->H0")["throughput_gbps_measure"][0]
    assert link > 0.95 * 10.0
    shares = res.pairs.filter(pl.col("dst") == "H0")["throughput_gbps_measure"].to_numpy()
    assert len(shares) == fan_in and np.abs(shares * fan_in / 10.0 - 1.0).max() < 0.1, shares
    q = res.timeseries("queue_bytes").filter((pl.col("key") == "L0->H0") & (pl.col("time_ms") >= 10.0))
    queue_us = q["value"].mean() * 8 / 10e9 * 1e6
    assert 15.0 < queue_us < 15.0 + 2.0 + 25.0, queue_us  # at most the whole flow-scaling range


def test_a_fixed_swift_target_below_the_base_rtt_is_warned_about_once(tmp_path: Any) -> None:
    """An explicit base target that leaves a flow's target below its base
    RTT: `cnsim run` prints the engine's warning once (not once per seed),
    naming the parameter and the flow."""
    p = cli(
        "run",
        "flows_incast",
        "--scheme",
        "swift",
        "--seeds",
        "2",
        "--set",
        "defaults.link_delay_us=25",
        "--set",
        "swift.base_target_us=25",
        "--set",
        "workload.fan_in=2",
        "--duration",
        "2",
        "--out",
        str(tmp_path / "r"),
        "--no-report",
    )
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "swift.base_target_us" in ln]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("warning: swift.base_target_us = 25 us gives flow H1->H0 a target of 27 us")
    assert "base RTT of 105.5 us" in lines[0]


def test_the_dcqcn_fixed_point_is_where_the_fluid_model_settles() -> None:
    """The fixed point solved from the fluid model's equations (Zhu et al.
    2016) against the integrated model, two flows at 5 Gbit/s: the fluid
    queue settles at the queue where the RED ramp marks with p* (98.1 KB),
    each flow at C / 2. Four flows need a p* above Pmax: the queue then sits
    at Kmax."""
    from cnsim.fluid import dcqcn_fixed_point, run_fluid
    from cnsim.validate import dcqcn_staggered

    sc = dcqcn_staggered(2)
    params = sc.engine_config()["scheme"]
    fp = dcqcn_fixed_point(params, 5e9, 1500.0)
    assert 0 < fp["p"] < params["pmax"]
    fl = run_fluid(sc)
    late = fl.time_ms >= 150.0
    assert fl.queue_bytes[late].mean() == pytest.approx(fp["queue_bytes"], rel=0.01)
    for v in fl.sent_gbps.values():
        assert v[late].mean() == pytest.approx(5.0, rel=0.01)
    assert dcqcn_fixed_point(params, 2.5e9, 1500.0)["queue_bytes"] == params["kmax_bytes"]


def test_the_modern_checks_say_when_a_figure_is_off() -> None:
    """The rows of `validate --only modern` on made-up measurements: each
    check can fail."""
    from cnsim import validate as V

    good = {("dctcp", n, k): {"peak": (k + n) * 1500.0, "link": 10.0} for n, k in V.MODERN_DCTCP}
    rows = V.modern_dctcp(good)
    assert all(r.ok for r in rows) and len(rows) == 8
    bad = {**good, ("dctcp", 2, 65): {"peak": 80 * 1500.0, "link": 9.5}}
    assert [r.ok for r in V.modern_dctcp(bad)][:2] == [False, False]
    apart = {"w40": (9.0, 1.0), "w90": (5.0, 5.0), "w190": (9.0, 1.0)}
    rows = V.modern_timely({"original": apart, "patched": apart})
    assert [r.ok for r in rows] == [True, True, True, True, False, True]
    swift = {
        ("swift", n, d): {"queue": 17e-6 * 10e9 / 8, "shares": [10.0 / n] * n, "link": 10.0}
        for n, d in V.MODERN_SWIFT
    }
    assert all(r.ok for r in V.modern_swift(swift))
    swift[("swift", 2, 1.0)] = {"queue": 40e-6 * 10e9 / 8, "shares": [6.0, 4.0], "link": 10.0}
    assert [r.ok for r in V.modern_swift(swift)][:3] == [False, False, True]


@pytest.mark.slow
def test_validate_modern_passes() -> None:
    """`cnsim validate --only modern`: every check within its tolerance
    (docs/calibration.md section 7)."""
    import json

    p = cli("validate", "--only", "modern", "--json")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = json.loads(p.stdout)["rows"]
    studies = {r["study"] for r in rows}
    assert studies == {"modern DCTCP", "modern DCQCN", "modern HPCC", "modern Swift", "modern TIMELY"}
    assert all(r["within"] for r in rows)


@pytest.mark.parametrize("value", ["10001", "20000", "1e6", "1e308"])
def test_a_timely_floor_above_the_line_rate_exits_2_naming_it(value: str, tmp_path: Any) -> None:
    """Issue 28 item 1 (it panicked in f64::clamp, a 153-line traceback): the
    engine's check of the built network refuses it, one line naming it."""
    p = cli(
        "run",
        "flows_incast",
        "--scheme",
        "timely",
        "--set",
        f"timely.min_rate_mbps={value}",
        "--out",
        str(tmp_path / "r"),
    )
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --set timely.min_rate_mbps: "), p.stderr
    assert "line rate" in lines[0] and "Traceback" not in p.stderr
    assert not (tmp_path / "r").exists()
