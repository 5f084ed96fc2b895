"""Flow workloads: the `[workload]` table of a scenario resolved into the
engine's transport flows (docs/scenario-format.md, "Flows").

- `poisson`: every host starts flows as a Poisson process, sizes from an
  empirical CDF (`websearch`, `hadoop`, a file, or the points inline),
  destinations uniform among the other hosts; the arrival rate makes each
  host offer `load` x its link rate on average.
- `incast`: `fan_in` senders each send `size_bytes` to one receiver at the
  same time, again every `period_us` if set.
- `permutation`: every host sends `size_bytes` to one other host, each host
  receiving one flow (host i to host i + n/2 mod n).
- `long_lived`: `fan_in` senders each send `size_bytes` (default: more than
  the run can carry) to one receiver, from `start_ms`.
- `matrix`: the flows of a connection matrix `file` (the Ultra Ethernet
  reference simulator's format), read by the engine (io/matrix.rs); node i
  of the matrix is the i-th host.
- `none`: no flows of its own; the transport's settings (header_bytes,
  ack_every, rto_us, end_when_done) for the flows of `[[jobs]]`.

Everything a workload would start is counted before anything is built
(`flow_count`), so that a workload of millions of flows is refused at once
(`workload.max_flows`) instead of filling memory or running for hours.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..declarations import declarations, limits
from ..errors import ScenarioError

BUILTIN_CDFS = ("websearch", "hadoop")

PS_PER_MS = 1_000_000_000
PS_PER_US = 1_000_000
#: `workload.max_flows` as the engine declares it (sections.rs: flow ids
#: index the engine's events, engine/queue.rs MAX_INDEX): its largest value.
_MAX_FLOWS = next(
    q
    for t in declarations()["sections"]
    if t["name"] == "workload"
    for q in t["params"]
    if q["name"] == "max_flows"
)
ENGINE_MAX_FLOWS = int(_MAX_FLOWS["max"]["value"])
#: Most flows the packet model indexes (its events name them: engine/queue.rs
#: MAX_INDEX = 4,194,303, less room for a Poisson count above its mean);
#: the flow-level model (fidelity = "flow") goes up to ENGINE_MAX_FLOWS.
PACKET_MAX_FLOWS = 4_000_000


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
            raise ScenarioError.at("workload.cdf", f"{source} line {n}: expected 'size_bytes probability'")
        try:
            points.append((float(parts[0]), float(parts[1])))
        except ValueError:
            raise ScenarioError.at("workload.cdf", f"{source} line {n}: not two numbers") from None
    if points and points[-1][1] == 100.0:
        # Percentages. Fractions ending in a stray 100 (0.5 read as 0.5 %)
        # are refused: every point before the last at most 1, one above 0.
        head = [p for _, p in points[:-1]]
        if head and max(head) <= 1 and any(p > 0 for p in head):
            raise ScenarioError.at(
                "workload.cdf",
                f"{source}: the probabilities before the last are fractions (at most 1) but the "
                "last is 100; give every probability as a fraction ending at 1, or as a percentage ending at 100",
            )
        points = [(s, p / 100.0) for s, p in points]
    check_points(points, source)
    return points


def check_points(points: list[tuple[float, float]], source: str) -> None:
    """The rules of a CDF: at least two points, sizes in 0..max_bytes (the
    engine's limit, `params::MAX_BYTES`: 2^40) and
    probabilities in 0..1, both non-decreasing, the last probability 1, and
    some size of at least 1 byte."""
    if len(points) < 2:
        raise ScenarioError.at("workload.cdf", f"{source}: at least two points are needed")
    for i, (s, p) in enumerate(points):
        if not (0 <= s <= limits()["max_bytes"]) or not (0 <= p <= 1):
            raise ScenarioError.at(
                "workload.cdf", f"{source} point {i}: size {s} or probability {p} out of range"
            )
        if i and (s < points[i - 1][0] or p < points[i - 1][1]):
            raise ScenarioError.at(
                "workload.cdf", f"{source} point {i}: sizes and probabilities must not decrease"
            )
    if points[-1][1] != 1.0:
        raise ScenarioError.at("workload.cdf", f"{source}: the last probability must be 1")
    if points[-1][0] < 1:
        raise ScenarioError.at(
            "workload.cdf", f"{source}: every size is below 1 byte; flows need at least 1 byte"
        )


def load_cdf(cdf: str | list[Any]) -> list[tuple[float, float]]:
    """A built-in CDF by name, a CDF file by path, or points given inline
    (`[[size_bytes, probability], ...]`, probabilities in 0..1)."""
    if isinstance(cdf, list):
        points = []
        for i, pt in enumerate(cdf):
            if not isinstance(pt, list | tuple) or len(pt) != 2:
                raise ScenarioError.at("workload.cdf", f"point {i}: expected [size_bytes, probability]")
            points.append((float(pt[0]), float(pt[1])))
        check_points(points, "the inline points")
        return points
    if cdf in BUILTIN_CDFS:
        text = (resources.files("cnsim") / "workloads" / f"{cdf}.cdf").read_text()
        return parse_cdf(text, cdf)
    return parse_cdf(_text(cdf)[1], cdf)


def _text(name: str) -> tuple[bytes, str]:
    """A CDF file's bytes and its text (UTF-8); errors name the file."""
    p = Path(name)
    try:
        found = p.is_file()
    except OSError as e:  # a name too long, a path through a file
        raise ScenarioError.at("workload.cdf", f"'{name}' cannot be read ({e.strerror or e})") from None
    if not found:
        raise ScenarioError.at(
            "workload.cdf", f"'{name}' is neither a built-in CDF ({', '.join(BUILTIN_CDFS)}) nor a file"
        )
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ScenarioError.at("workload.cdf", f"'{name}' cannot be read ({e.strerror or e})") from None
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError.at(
            "workload.cdf", f"'{name}' is not UTF-8 text; expected lines 'size_bytes probability'"
        ) from None


def embed_file_cdf(w: Any) -> None:
    """Reads workload `w`'s CDF file once and puts its points inline, with
    the file and the SHA-256 of its bytes in `cdf_source`: what runs is what
    a saved scenario holds, and the saved scenario re-runs the same flows
    anywhere, whatever becomes of the file. Built-in names and inline points
    are left as they are."""
    if not isinstance(w.cdf, str):
        return
    if w.cdf in BUILTIN_CDFS:
        w.cdf_source = None  # a saved scenario's, whose cdf was changed to a built-in one
        return
    data, text = _text(w.cdf)
    points = parse_cdf(text, w.cdf)
    import hashlib  # OpenSSL's library: loaded only for a CDF read from a file

    w.cdf_source = f"{w.cdf} sha256:{hashlib.sha256(data).hexdigest()}"
    w.cdf = [[s, q] for s, q in points]


def cdf_mean(points: list[tuple[float, float]]) -> float:
    """Mean size (bytes) of a piecewise-linear CDF."""
    m = points[0][0] * points[0][1]
    for (s0, p0), (s1, p1) in zip(points[:-1], points[1:], strict=True):
        m += (p1 - p0) * (s0 + s1) / 2
    return m


def _num(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:g}"


@dataclass
class Plan:
    """What a workload will start, counted before anything is built."""

    hosts: list[str]
    start_ps: int
    end_ps: int
    #: Flows expected per run (poisson: the mean), and in words.
    flows: float
    why: str
    #: What to change to start fewer.
    fewer: str
    #: poisson: CDF points and arrivals per second at each host.
    cdf: list[tuple[float, float]] | None = None
    rate_per_s: float = 0.0
    #: incast / long_lived: the receiver and the senders; incast: start times.
    receiver: str | None = None
    senders: list[str] | None = None
    times: int = 1
    period_ps: int = 0


def plan(w: Any, hosts: list[str], rate_bps: dict[str, float], duration_ms: float) -> Plan:
    """Checks workload `w` over `hosts` in a run of `duration_ms` and counts
    the flows it would start (nothing is built). Raises ScenarioError naming
    the parameter for what is not allowed."""
    seen: set[str] = set()
    for h in hosts:
        if h in seen:
            raise ScenarioError.at("workload.hosts", f"'{h}' is listed twice; each host takes part once")
        seen.add(h)
    if len(hosts) < 2:
        raise ScenarioError.at("workload.hosts", "at least two stations are needed")
    if w.start_ms >= duration_ms:
        raise ScenarioError.at(
            "workload.start_ms",
            f"{_g(w.start_ms)} is not allowed; expected a time before the run's end "
            f"(duration_ms = {_g(duration_ms)}): no flow would start",
        )
    # start_ms < end_ms is the engine's declared rule (sections.rs), asked
    # before the workload is resolved (`Scenario.engine_config_checked`):
    # here an empty window only counts no flows.
    start = round(w.start_ms * PS_PER_MS)
    end_ms = min(w.end_ms if w.end_ms is not None else duration_ms, duration_ms)
    end = round(end_ms * PS_PER_MS)
    if w.kind == "poisson":
        cdf = load_cdf(w.cdf)
        mean = cdf_mean(cdf)
        rates = {rate_bps[h] for h in hosts}
        if len(rates) != 1:
            raise ScenarioError.at("workload.hosts", "a poisson workload needs hosts of one link rate")
        (rate,) = rates
        per_s = w.load * rate / (8 * max(mean, 1.0))
        secs = (end - start) / 1e12
        return Plan(
            hosts,
            start,
            end,
            per_s * len(hosts) * secs,
            f"load {_g(w.load)} x {len(hosts)} hosts x {_g(rate / 1e9)} Gbit/s x {_g(secs * 1e3)} ms / mean size "
            f"{_num(mean)} bytes",
            "lower workload.load, shorten the arrival window (workload.start_ms / end_ms) or use larger "
            "flows (workload.cdf)",
            cdf=cdf,
            rate_per_s=per_s,
        )
    if w.kind == "permutation":
        return Plan(hosts, start, end, len(hosts), f"{len(hosts)} hosts", "use fewer hosts (workload.hosts)")
    if w.kind == "none":  # the transport's settings only ([[jobs]] bring the flows)
        return Plan(hosts, start, end, 0.0, "no flows of its own", "")
    if w.kind == "matrix":
        if w.file is None:
            raise ScenarioError.at("workload.file", 'kind = "matrix" needs a connection-matrix file')
        n = matrix_connections(matrix_path(w.file), w.file)
        return Plan(hosts, start, end, float(n), f"{n:,} connections in {w.file}", "use a smaller matrix")
    receiver = w.receiver if w.receiver is not None else hosts[0]
    if receiver not in hosts:
        raise ScenarioError.at("workload.receiver", f"'{receiver}' is not one of the workload's hosts")
    senders = [h for h in hosts if h != receiver]
    if w.fan_in > len(senders):
        raise ScenarioError.at(
            "workload.fan_in",
            f"{w.fan_in} senders asked, the workload has {len(senders)} hosts besides the receiver",
        )
    senders = senders[: w.fan_in]
    times, period = 1, 0
    if w.kind == "incast" and w.period_us is not None:
        period = round(w.period_us * PS_PER_US)
        if period < 1:
            raise ScenarioError.at(
                "workload.period_us", f"{w.period_us:g} is not allowed; expected at least 1e-06 (1 ps)"
            )
        # Start times start + k x period, k >= 0, before the end.
        times = 1 + max(0, (end - start - 1) // period)
    why = f"{len(senders)} senders" + (
        f" x {times:,} incasts (workload.period_us = {_g(w.period_us)} over {_g((end - start) / 1e9)} ms)"
        if period
        else ""
    )
    fewer = "raise workload.period_us or lower workload.fan_in" if period else "lower workload.fan_in"
    return Plan(
        hosts,
        start,
        end,
        float(times * len(senders)),
        why,
        fewer,
        receiver=receiver,
        senders=senders,
        times=times,
        period_ps=period,
    )


def matrix_path(name: str) -> Path:
    """A connection matrix by path, else one of cnsim's by file name
    (python/cnsim/matrices: the reference's published cases)."""
    p = Path(name)
    try:
        if p.is_file():
            return p.resolve()
    except OSError as e:
        raise ScenarioError.at("workload.file", f"'{name}' cannot be read ({e.strerror or e})") from None
    own = resources.files("cnsim") / "matrices" / name
    if p.name == name and own.is_file():
        return Path(str(own))
    known = sorted(
        f.name for f in (resources.files("cnsim") / "matrices").iterdir() if f.name.endswith(".cm")
    )
    raise ScenarioError.at(
        "workload.file", f"'{name}' is neither a file nor one of cnsim's matrices ({', '.join(known)})"
    )


def matrix_connections(path: Path, name: str) -> int:
    """The `Connections C` of a matrix's header (the engine reads the rest
    and checks it against this)."""
    try:
        with path.open("rb") as fh:
            for i, raw in enumerate(fh):
                if i > 1000:
                    break
                parts = raw.split()
                if len(parts) == 2 and parts[0] == b"Connections" and parts[1].isdigit():
                    return int(parts[1])
    except OSError as e:
        raise ScenarioError.at("workload.file", f"'{name}' cannot be read ({e.strerror or e})") from None
    raise ScenarioError.at("workload.file", f"'{name}': no 'Connections C' line in its header")


def _g(v: float | None) -> str:
    return f"{v:g}" if v is not None else "none"


def check_count(w: Any, p: Plan, fidelity: str = "packet") -> None:
    """Refuses a workload expected to start more than `workload.max_flows`
    flows in a run, and a max_flows above what the packet model indexes
    when it runs."""
    most = PACKET_MAX_FLOWS if fidelity == "packet" else ENGINE_MAX_FLOWS
    if w.max_flows > most:
        raise ScenarioError.at(
            "workload.max_flows",
            f'{w.max_flows:,} is not allowed with fidelity = "packet": the packet model indexes at most '
            f'{PACKET_MAX_FLOWS:,} flows (fidelity = "flow" runs up to {ENGINE_MAX_FLOWS:,})',
        )
    if p.flows > w.max_flows:
        n = f"{p.flows:,.0f}" if math.isfinite(p.flows) else str(p.flows)
        raise ScenarioError.at(
            "workload",
            f"about {n} flows per run ({p.why}), more than workload.max_flows = {w.max_flows:,}; "
            f'{p.fewer}, or raise workload.max_flows (at most {most:,} with fidelity = "{fidelity}")',
        )


def each_workload(m: Any) -> list[tuple[str, Any]]:
    """Scenario model `m`'s workloads, each with the name its errors take:
    `[workload]`, then each of `[[workloads]]` (`workloads[i]`)."""
    out = [("workload", m.workload)] if m.workload is not None else []
    return out + [(f"workloads[{i}]", w) for i, w in enumerate(getattr(m, "workloads", None) or [])]


@contextmanager
def named(at: str) -> Iterator[None]:
    """Errors of the workload named `at` (`workloads[1]`) name it, where
    the checks below say `workload`."""
    try:
        yield
    except ScenarioError as e:
        if at == "workload" or not e.param or not e.param.startswith("workload"):
            raise
        param = at + e.param[len("workload") :]
        what = e.what.replace("workload.", f"{at}.")
        if what.startswith(f"{param}: "):
            what = what[len(param) + 2 :]
        raise ScenarioError.at(param, what) from None


def hosts_and_rates(m: Any, w: Any = None) -> tuple[list[str], dict[str, float]]:
    """Workload `w`'s hosts (`hosts`, else every station; default: `m`'s
    `[workload]`) of scenario model `m`, and each station's link rate (bit/s)."""
    w = m.workload if w is None else w
    stations = [n.name for n in m.nodes if n.kind == "station"]
    hosts = list(w.hosts) if w.hosts is not None else stations
    known = set(stations)
    unknown = [h for h in hosts if h not in known]
    if unknown:
        raise ScenarioError.at("workload.hosts", f"'{unknown[0]}' is not a station")
    rate_bps: dict[str, float] = {}
    for link in m.links:
        gbps = link.rate_gbps if link.rate_gbps is not None else m.defaults.link_rate_gbps
        for a in (link.a, link.b):
            if a in known:
                rate_bps[a] = round(gbps * 1e9)
    missing = [h for h in hosts if h not in rate_bps]
    if missing:
        raise ScenarioError.at("workload.hosts", f"'{missing[0]}' has no link")
    return hosts, rate_bps


def scenario_plans(m: Any) -> list[Plan]:
    """The checked plans of scenario model `m`'s workloads (it has one),
    each's flow count within its `max_flows`."""
    plans = []
    sends: dict[str, tuple[int, str]] = {}  # host -> (priority, the workload setting it)
    for at, w in each_workload(m):
        with named(at):
            hosts, rate_bps = hosts_and_rates(m, w)
            p = plan(w, hosts, rate_bps, m.duration_ms)
            check_count(w, p, m.fidelity)
        plans.append(p)
        if w.priority is not None:
            for h in p.senders if p.senders is not None else p.hosts:
                was = sends.setdefault(h, (w.priority, at))
                if was[0] != w.priority:
                    raise ScenarioError.at(
                        f"{at}.priority",
                        f"{w.priority} for {h}, which {was[1]} sends at priority {was[0]}: a station's NIC "
                        "sends one priority; give the workloads hosts of their own",
                    )
    return plans


def scenario_plan(m: Any) -> Plan:
    """The checked plan of scenario model `m`'s `[workload]` (which it has;
    its `[[workloads]]` checked too), its flow count within `workload.max_flows`."""
    return scenario_plans(m)[0]


def transport_of(m: Any) -> dict[str, Any]:
    """The engine's `transport` table of scenario model `m` (which has a
    workload): every workload's flows and arrivals, `[workload]`'s transport."""
    out: dict[str, Any] | None = None
    for at, w in each_workload(m):
        with named(at):
            hosts, rate_bps = hosts_and_rates(m, w)
            t = transport(w, hosts, rate_bps, m.duration_ms, m.fidelity)
        if out is None:
            out = t
        else:
            if "matrix" in t and "matrix" in out:
                raise ScenarioError.at(f"{at}.kind", 'one workload of a run may be kind = "matrix"')
            if "matrix" in t:
                out["matrix"] = t["matrix"]
            out["flows"] += t["flows"]
            out["arrivals"] += t["arrivals"]
    assert out is not None
    return out


def transport(
    w: Any, hosts: list[str], rate_bps: dict[str, float], duration_ms: float, fidelity: str = "packet"
) -> dict[str, Any]:
    """The engine's `transport` table for workload `w` over `hosts`."""
    p = plan(w, hosts, rate_bps, duration_ms)
    check_count(w, p, fidelity)
    out: dict[str, Any] = {"flows": [], "arrivals": []}
    if "rto_us" in w.names:  # [workload]'s: the one transport's keys ([[workloads]] share them)
        out.update(
            header_bytes=w.header_bytes,
            ack_every=w.ack_every,
            rto_ps=round(w.rto_us * PS_PER_US),
            end_when_done=w.end_when_done,
        )
    prio = {"priority": w.priority} if w.priority is not None else {}
    if w.kind == "poisson":
        out["arrivals"].append(
            {
                "stations": hosts,
                "rate_per_s": p.rate_per_s,
                "cdf": p.cdf,
                "start_ps": p.start_ps,
                "end_ps": p.end_ps,
                **prio,
            }
        )
        return out
    size = (
        w.size_bytes
        if w.size_bytes is not None
        else (int(limits()["max_bytes"]) if w.kind == "long_lived" else 500_000)
    )
    if w.kind == "none":
        return out
    if w.kind == "matrix":
        out["matrix"] = {
            "file": w.file,
            "path": str(matrix_path(w.file)),
            "hosts": hosts,
            "start_ps": p.start_ps,
            **prio,
        }
        return out
    if w.kind == "permutation":
        n = len(hosts)
        shift = max(n // 2, 1)
        out["flows"] = [
            {
                "src": hosts[i],
                "dst": hosts[(i + shift) % n],
                "size_bytes": size,
                "start_ps": p.start_ps,
                **prio,
            }
            for i in range(n)
        ]
        return out
    # incast and long_lived: fan_in senders to one receiver
    assert p.senders is not None
    out["flows"] = [
        {"src": s, "dst": p.receiver, "size_bytes": size, "start_ps": p.start_ps + k * p.period_ps, **prio}
        for k in range(p.times)
        for s in p.senders
    ]
    return out
