"""The links the Ultra Ethernet reference simulator degrades with `-failed N`,
as cnsim `[[events]]` (docs/uet.md, "Degraded links").

uet-htsim 40ccb05 (`htsim_uec -failed N`; datacenter/fat_tree_topology.cpp,
`FatTreeTopology::init_network` and `alloc_queue`) picks no link at random:
when it builds the fat tree it gives the first links it builds a reduced
queue (`reduced_speed`): 25% of the rate (`_failed_link_ratio = 0.25`), 25%
of the queue (`queuesize * 0.25` into a whole number of bytes) and 25% of
the ECN thresholds (`_ecn_low * 0.25`, `_ecn_high * 0.25`, likewise). They
are so from the start of the run; nothing else (the BDP, the RTT, NSCC's
parameters, the RTO) changes.

- Three tiers: the core-to-aggregation direction only (`queues_nc_nup`;
  the aggregation switch's uplink to the core keeps its rate) of uplink
  `l` of aggregation switch `agg` (global index, pod-major), to core
  `podpos + P * l` (`podpos = agg % P`, `P` aggregation switches per pod),
  for `l + agg * P < N`, every member of the bundle. Where each aggregation
  switch has `P` core uplinks (the K-ary fat tree) these are the first N
  uplinks in (agg, l) order; with fewer (an oversubscribed core, `L < P`)
  switch `agg` loses its uplinks `l < min(L, N - agg * P)`.
- Two tiers: both directions of the link between every ToR and each of the
  first N aggregation switches (`agg < N`): N links per ToR.

cnsim's generators name the same switches: in the K-ary fat tree and the
`pods` fabric, aggregation switch `agg` is `F<agg // P>_<agg % P>` and core
`podpos + P * l` is `S<podpos>_<l>`; in the leaf-spine, ToR `t` is `L<t>` and
aggregation switch `a` is `S<a>`. Each degraded direction becomes a
`link_rate` event at 0 ms with `scale_buffers = true`:

    python -m cnsim.degraded --pods 16 8 8 --failed 8            # the 1,024-node K-ary fat tree
    python -m cnsim.degraded --leafspine 16 8 --failed 2       # 16 leaves, 8 spines
"""

from __future__ import annotations

import argparse
from typing import Any

#: The reference's `_failed_link_ratio`.
FAILED_RATIO = 0.25


def failed_pods(pods: int, fabric_per_pod: int, spines_per_plane: int, n: int) -> list[tuple[str, str]]:
    """The link directions (from, to) the reference degrades with `-failed n`
    on a three-tier fabric of `pods` pods of `fabric_per_pod` aggregation
    switches, each with `spines_per_plane` core uplinks (cnsim's `pods`
    generator; the K-ary fat tree is pods = K, fabric_per_pod =
    spines_per_plane = K / 2)."""
    p, out = fabric_per_pod, []
    for agg in range(pods * p):
        for up in range(spines_per_plane):
            if up + agg * p < n:
                pod, podpos = divmod(agg, p)
                out.append((f"S{podpos}_{up}", f"F{pod}_{podpos}"))
    return out


def failed_leafspine(leaves: int, spines: int, n: int) -> list[tuple[str, str]]:
    """The link directions the reference degrades with `-failed n` on a
    two-tier fabric (cnsim's `leafspine`): both directions between every
    leaf and each spine below n."""
    out = []
    for t in range(leaves):
        for a in range(min(n, spines)):
            out += [(f"S{a}", f"L{t}"), (f"L{t}", f"S{a}")]
    return out


def events(links: list[tuple[str, str]], rate_gbps: float) -> list[dict[str, Any]]:
    """`link_rate` events degrading `links` (configured at `rate_gbps`) as the
    reference does, from the start."""
    return [
        {
            "at_ms": 0.0,
            "action": "link_rate",
            "from": a,
            "to": b,
            "rate_gbps": rate_gbps * FAILED_RATIO,
            "scale_buffers": True,
        }
        for a, b in links
    ]


def toml(evs: list[dict[str, Any]]) -> str:
    """The events as `[[events]]` tables."""
    lines = []
    for e in evs:
        lines.append("[[events]]")
        lines += [
            f"at_ms = {e['at_ms']:g}",
            'action = "link_rate"',
            f'from = "{e["from"]}"',
            f'to = "{e["to"]}"',
            f"rate_gbps = {e['rate_gbps']:g}",
            "scale_buffers = true",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m cnsim.degraded", description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--pods", nargs=3, type=int, metavar=("PODS", "FABRIC_PER_POD", "SPINES_PER_PLANE"))
    g.add_argument("--leafspine", nargs=2, type=int, metavar=("LEAVES", "SPINES"))
    ap.add_argument("--failed", type=int, required=True, help="the reference's -failed N")
    ap.add_argument("--rate-gbps", type=float, default=100.0, help="the links' configured rate (default 100)")
    a = ap.parse_args(argv)
    if a.pods:
        links = failed_pods(*a.pods, a.failed)
    else:
        links = failed_leafspine(*a.leafspine, a.failed)
    print(toml(events(links, a.rate_gbps)), end="")


if __name__ == "__main__":
    main()
