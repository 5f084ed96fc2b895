"""Flow workloads: the `[workload]` table of a scenario resolved into the
engine's transport flows (docs/scenario-format.md, "Flows").

- `poisson`: every host starts flows as a Poisson process, sizes from an
  empirical CDF (`websearch`, `hadoop`, or a file), destinations uniform
  among the other hosts; the arrival rate makes each host offer `load` x its
  link rate on average.
- `incast`: `fan_in` senders each send `size_bytes` to one receiver at the
  same time, again every `period_us` if set.
- `permutation`: every host sends `size_bytes` to one other host, each host
  receiving one flow (host i to host i + n/2 mod n).
- `long_lived`: `fan_in` senders each send `size_bytes` (default: more than
  the run can carry) to one receiver, from `start_ms`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ScenarioError

BUILTIN_CDFS = ("websearch", "hadoop")

PS_PER_MS = 1_000_000_000
PS_PER_US = 1_000_000


def parse_cdf(text: str, source: str) -> list[tuple[float, float]]:
    """Lines `size_bytes probability` (`#` comments); probabilities in [0, 1],
    or percentages when the last is 100."""
    points: list[tuple[float, float]] = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace(",", " ").split()
        if len(parts) != 2:
            raise ScenarioError(f"workload.cdf: {source} line {n}: expected 'size_bytes probability'")
        try:
            points.append((float(parts[0]), float(parts[1])))
        except ValueError:
            raise ScenarioError(f"workload.cdf: {source} line {n}: not two numbers") from None
    if points and points[-1][1] == 100.0:
        points = [(s, p / 100.0) for s, p in points]
    _check(points, source)
    return points


def _check(points: list[tuple[float, float]], source: str) -> None:
    if len(points) < 2:
        raise ScenarioError(f"workload.cdf: {source}: at least two points are needed")
    for i, (s, p) in enumerate(points):
        if not (0 <= s <= 2**40) or not (0 <= p <= 1):
            raise ScenarioError(f"workload.cdf: {source} point {i}: size {s} or probability {p} out of range")
        if i and (s < points[i - 1][0] or p < points[i - 1][1]):
            raise ScenarioError(
                f"workload.cdf: {source} point {i}: sizes and probabilities must not decrease"
            )
    if points[-1][1] != 1.0:
        raise ScenarioError(f"workload.cdf: {source}: the last probability must be 1")


def load_cdf(name: str) -> list[tuple[float, float]]:
    """A built-in CDF by name, or a CDF file by path."""
    if name in BUILTIN_CDFS:
        text = (resources.files("cnsim") / "workloads" / f"{name}.cdf").read_text()
        return parse_cdf(text, name)
    p = Path(name)
    if not p.is_file():
        raise ScenarioError(
            f"workload.cdf: '{name}' is neither a built-in CDF ({', '.join(BUILTIN_CDFS)}) nor a file"
        )
    return parse_cdf(p.read_text(), name)


def cdf_mean(points: list[tuple[float, float]]) -> float:
    """Mean size (bytes) of a piecewise-linear CDF."""
    m = points[0][0] * points[0][1]
    for (s0, p0), (s1, p1) in zip(points[:-1], points[1:], strict=True):
        m += (p1 - p0) * (s0 + s1) / 2
    return m


def transport(w: Any, hosts: list[str], rate_bps: dict[str, float], duration_ms: float) -> dict[str, Any]:
    """The engine's `transport` table for workload `w` over `hosts`."""
    if len(hosts) < 2:
        raise ScenarioError("workload.hosts: at least two stations are needed")
    start = round(w.start_ms * PS_PER_MS)
    end_ms = w.end_ms if w.end_ms is not None else duration_ms
    end = round(min(end_ms, duration_ms) * PS_PER_MS)
    out: dict[str, Any] = {
        "flows": [],
        "arrivals": [],
        "ack_every": w.ack_every,
        "rto_ps": round(w.rto_us * PS_PER_US),
        "end_when_done": w.end_when_done,
    }
    if w.kind == "poisson":
        cdf = load_cdf(w.cdf)
        mean = cdf_mean(cdf)
        rates = {rate_bps[h] for h in hosts}
        if len(rates) != 1:
            raise ScenarioError("workload.hosts: a poisson workload needs hosts of one link rate")
        (rate,) = rates
        out["arrivals"].append(
            {
                "stations": hosts,
                "rate_per_s": w.load * rate / (8 * max(mean, 1.0)),
                "cdf": cdf,
                "start_ps": start,
                "end_ps": end,
            }
        )
        return out
    size = w.size_bytes if w.size_bytes is not None else (1 << 40 if w.kind == "long_lived" else 500_000)
    if w.kind == "permutation":
        n = len(hosts)
        shift = max(n // 2, 1)
        out["flows"] = [
            {"src": hosts[i], "dst": hosts[(i + shift) % n], "size_bytes": size, "start_ps": start}
            for i in range(n)
        ]
        return out
    # incast and long_lived: fan_in senders to one receiver
    receiver = w.receiver if w.receiver is not None else hosts[0]
    if receiver not in hosts:
        raise ScenarioError(f"workload.receiver: '{receiver}' is not one of the workload's hosts")
    senders = [h for h in hosts if h != receiver]
    if w.fan_in > len(senders):
        raise ScenarioError(
            f"workload.fan_in: {w.fan_in} senders asked, the workload has {len(senders)} hosts besides the receiver"
        )
    senders = senders[: w.fan_in]
    times = [start]
    if w.kind == "incast" and w.period_us is not None:
        period = round(w.period_us * PS_PER_US)
        while times[-1] + period < end:
            times.append(times[-1] + period)
    out["flows"] = [
        {"src": s, "dst": receiver, "size_bytes": size, "start_ps": t} for t in times for s in senders
    ]
    return out
