"""Metrics of metrics.md computed from what a run recorded: scalar metrics
per seed (throughput, fairness, drops, PAUSE, overhead) and their statistics
over seeds. Nothing here runs inside the engine's hot path."""

from __future__ import annotations

import math
from typing import Any

#: Metrics whose value is a count (reported as integers).
COUNTS = {"dropped_cp", "dropped_rp", "pause_frames", "frames", "frames_delivered"}


def fairness(rates: list[float], target: float) -> dict[str, float]:
    """dev_max, dev_min, dev_mean, dev_rms and Jain's index of `rates` around
    the fair share `target` (metrics.md, "Fairness")."""
    if not rates:
        return {}
    devs = [abs(r - target) / target for r in rates]
    x = [r / target for r in rates]
    sq = sum(v * v for v in x)
    return {
        "dev_max": max(devs),
        "dev_min": min(devs),
        "dev_mean": sum(devs) / len(devs),
        "dev_rms": math.sqrt(sum((r - target) ** 2 for r in rates) / len(rates)) / target,
        "jain": (sum(x) ** 2) / (len(x) * sq) if sq > 0 else 0.0,
    }


def _window_index(result: dict[str, Any], name: str) -> int | None:
    for i, w in enumerate(result["windows"]):
        if w["name"] == name:
            return i
    return None


def per_seed(result: dict[str, Any], scenario: Any) -> dict[str, float | int | None]:
    """Every scalar metric of one run (`result`: the engine's results JSON)."""
    m: dict[str, float | int | None] = dict(result["metrics"])
    model = scenario.model
    if model.fairness is not None:
        w = _window_index(result, model.fairness.window)
        if w is not None:
            rates = [
                f["throughput_gbps"][w]
                for f in result["flows"]
                if f["generated"] > 0 and _loaded(scenario, f["src"])
            ]
            m.update(fairness(rates, model.fairness.target_gbps))
    if model.utilization is not None:
        w = _window_index(result, model.utilization.window)
        link = next((x for x in result["links"] if x["name"] == model.utilization.link), None)
        if w is not None and link is not None:
            m["link_utilization"] = link["throughput_gbps"][w] / (link["rate_bps"] / 1e9)
    if model.hotspot is not None:
        hot = model.hotspot.node
        m["hot_port_throughput"] = sum(f["throughput_gbps"][0] for f in result["flows"] if f["dst"] == hot)
        w = _window_index(result, "hotspot")
        if w is not None:
            rate = model.hotspot.rate_gbps
            delivered = sum(f["throughput_gbps"][w] for f in result["flows"] if f["dst"] == hot)
            m["bottleneck_utilization"] = delivered / rate if rate > 0 else None
    return m


def _loaded(scenario: Any, name: str) -> bool:
    return any(n.name == name and n.load > 0 for n in scenario.model.nodes)


def summarize(per_seed_metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{metric: {mean, min, max, per_seed}} with null where a value is missing."""
    names: list[str] = []
    for m in per_seed_metrics:
        for k in m:
            if k not in names:
                names.append(k)
    out: dict[str, dict[str, Any]] = {}
    for k in names:
        vals = [m.get(k) for m in per_seed_metrics]
        present = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
        out[k] = {
            "mean": sum(present) / len(present) if present else None,
            "min": min(present) if present else None,
            "max": max(present) if present else None,
            "per_seed": vals,
        }
    return out
