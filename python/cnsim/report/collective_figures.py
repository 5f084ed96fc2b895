"""The report's figures of collective jobs ([[jobs]], docs/collectives.md):
busbw per collective against the payload rate, step time per iteration,
and a per-rank timeline (when each rank began and was done in each
collective), all of the first seed."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

#: Most ranks the timeline draws one row each for (the rest are left out,
#: and the title says so): past a few hundred rows a figure is a smear.
TIMELINE_RANKS = 128
#: Ends past the run (2^64 - 1: unfinished, or no flow).
_NONE = 2**64 - 1


def _first_seed(frame: Any) -> Any:
    if frame is None or not len(frame):
        return None
    return frame.filter(frame["seed"] == frame["seed"][0])


def _label(row: dict[str, Any], jobs: int) -> str:
    what = f"{row['collective']} ({row['algorithm']})"
    where = f"it {row['iteration']}, ph {row['phase']}"
    return f"{row['job']}: {what}, {where}" if jobs > 1 else f"{what}, {where}"


def busbw_fig(res: Any) -> Any | None:
    """busbw of each collective (first seed), against the payload rate that
    bounds it; the ratio to the ideal time written on each bar."""
    c = _first_seed(res.collectives)
    if c is None:
        return None
    rows = c.to_dicts()[:64]
    jobs = sorted({r["job"] for r in rows})
    fig = Figure(figsize=(9, max(2.6, 0.28 * len(rows) + 1.4)))
    ax = fig.subplots()
    y = np.arange(len(rows))
    colours = {j: f"C{i % 10}" for i, j in enumerate(jobs)}
    busbw = np.array([r["busbw_gbps"] if r["busbw_gbps"] == r["busbw_gbps"] else 0.0 for r in rows])
    ax.barh(y, busbw, color=[colours[r["job"]] for r in rows], alpha=0.8)
    payload = max(r["payload_gbps"] for r in rows)
    ax.axvline(payload, color="k", ls="--", lw=1, label=f"payload rate {payload:.1f} Gbit/s")
    for i, r in enumerate(rows):
        text = "unfinished" if r["end_ps"] == _NONE else f"{r['vs_ideal']:.2f} x ideal"
        ax.text(max(busbw[i], 0.0) + payload * 0.01, i, text, va="center", fontsize=7)
    ax.set_yticks(y, [_label(r, len(jobs)) for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, payload * 1.25)
    ax.set_xlabel("busbw (Gbit/s, NCCL's bus bandwidth)")
    more = f", first 64 of {len(c)}" if len(c) > 64 else ""
    ax.set_title(f"busbw per collective, seed {c['seed'][0]}{more}")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def step_time_fig(res: Any) -> Any | None:
    """Each job's step time per iteration (first seed); with one iteration
    each, a bar per job."""
    it = _first_seed(res.iterations)
    if it is None:
        return None
    fig = Figure(figsize=(9, 3.6))
    ax = fig.subplots()
    jobs = list(dict.fromkeys(it["job"].to_list()))
    for i, job in enumerate(jobs):
        j = it.filter(it["job"] == job)
        t = j["step_time_us"].to_numpy() / 1e3
        ax.plot(j["iteration"].to_numpy(), t, "o-", color=f"C{i % 10}", label=job)
    ax.set_xlabel("iteration")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("step time (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"step time per iteration, seed {it['seed'][0]}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def rank_timeline_fig(res: Any) -> Any | None:
    """When each rank began and was done in each collective (first seed,
    first job's first TIMELINE_RANKS ranks for each job): a row per rank, a
    bar per collective coloured by phase; the gaps are the compute phases
    and the waits at the gates."""
    rk = _first_seed(res.collective_ranks)
    if rk is None:
        return None
    rk = rk.filter((rk["start_ps"] != _NONE) & (rk["end_ps"] != _NONE))
    if not len(rk):
        return None
    jobs = list(dict.fromkeys(rk["job"].to_list()))
    rows: list[tuple[str, int]] = []
    left_out = 0
    for job in jobs:
        ranks = sorted(set(rk.filter(rk["job"] == job)["rank"].to_list()))
        left_out += max(0, len(ranks) - TIMELINE_RANKS)
        rows += [(job, r) for r in ranks[:TIMELINE_RANKS]]
    row_of = {k: i for i, k in enumerate(rows)}
    fig = Figure(figsize=(9, min(9.0, max(2.6, 0.05 * len(rows) + 1.6))))
    ax = fig.subplots()
    phases = sorted(set(rk["phase"].to_list()))
    for d in rk.to_dicts():
        i = row_of.get((d["job"], d["rank"]))
        if i is None:
            continue
        a, b = d["start_ps"] / 1e9, d["end_ps"] / 1e9  # ms
        ax.barh(i, b - a, left=a, height=0.8, color=f"C{phases.index(d['phase']) % 10}", lw=0)
    names: dict[int, set[str]] = {}
    c = _first_seed(res.collectives)
    for d in c.select("phase", "collective").unique().to_dicts() if c is not None else []:
        names.setdefault(d["phase"], set()).add(d["collective"])
    handles = [
        Patch(
            color=f"C{i % 10}",
            label=f"phase {p}" + (f" ({', '.join(sorted(names[p]))})" if p in names else ""),
        )
        for i, p in enumerate(phases)
    ]
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ticks = [i for i, (_, r) in enumerate(rows) if r % max(1, len(rows) // 16) == 0]
    ax.set_yticks(
        ticks, [f"{j} {r}" if len(jobs) > 1 else str(r) for j, r in (rows[i] for i in ticks)], fontsize=7
    )
    ax.set_ylabel("rank")
    ax.set_xlabel("time (ms)")
    more = f" ({left_out} ranks more not drawn)" if left_out else ""
    ax.set_title(f"per-rank timeline: busy in each collective, seed {rk['seed'][0]}{more}")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(handles=handles, fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig
