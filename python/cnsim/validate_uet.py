"""`cnsim validate --only uet`: the Ultra Ethernet transport against its
reference simulator's published figures (issue 41; docs/calibration.md
section 9)."""

from __future__ import annotations

from typing import Any

from .results import Results
from .scenario import Scenario, load
from .validate_rows import Row, _rel, run_many

#: The Ultra Ethernet reference simulator's published regression figures
#: (uet-htsim 40ccb05, `datacenter/validate_outputs/validate_uec_sender.out`,
#: NSCC only, fabrics.md section 2; `validate_uec_rcv.out` and
#: `validate_uec_both.out`, RCCC and both): per case, the matrix, its fabric,
#: the entropies, the congestion control, the seeds cnsim averages over, and
#: the slowest flow's and (where given) the first flow's completion (us).
UET_CASES: dict[str, dict[str, Any]] = {
    "one connection": {"file": "one.cm", "hosts": 16, "paths": 64, "seeds": 1, "tail": 176.2},
    "16-node incast": {
        "file": "incast.cm",
        "hosts": 16,
        "paths": 64,
        "seeds": 20,
        "tail": 2478.5,
        "first": 1273.6,
    },
    "128-node incast": {
        "file": "incast_128.cm",
        "hosts": 128,
        "paths": 64,
        "seeds": 2,
        "tail": 21029.0,
        "first": 10788.0,
    },
    "16-node permutation, 128 paths": {
        "file": "perm_16n_16c_2MB.cm",
        "hosts": 16,
        "paths": 128,
        "seeds": 5,
        "tail": 194.0,
    },
    "one connection, RCCC": {
        "file": "one.cm",
        "hosts": 16,
        "paths": 64,
        "seeds": 1,
        "cc": "rccc",
        "tail": 177.368,
    },
    "one connection, NSCC and RCCC": {
        "file": "one.cm",
        "hosts": 16,
        "paths": 64,
        "seeds": 1,
        "cc": "both",
        "tail": 177.368,
    },
    "16-node incast, RCCC": {
        "file": "incast.cm",
        "hosts": 16,
        "paths": 64,
        "seeds": 5,
        "cc": "rccc",
        "tail": 2464.44,
        "first": 2368.38,
    },
    "16-node incast, NSCC and RCCC": {
        "file": "incast.cm",
        "hosts": 16,
        "paths": 64,
        "seeds": 5,
        "cc": "both",
        "tail": 2462.92,
        "first": 2387.91,
    },
    "128-node incast, RCCC": {
        "file": "incast_128.cm",
        "hosts": 128,
        "paths": 64,
        "seeds": 1,
        "cc": "rccc",
        "tail": 20891.4,
        "first": 20354.6,
    },
    "128-node incast, NSCC and RCCC": {
        "file": "incast_128.cm",
        "hosts": 128,
        "paths": 64,
        "seeds": 1,
        "cc": "both",
        "tail": 20892.4,
        "first": 20353.9,
    },
    "1,024-node permutation, 128 paths": {
        "file": "perm_1024n_1024c_0u_2000000b.cm",
        "hosts": 1024,
        "paths": 128,
        "seeds": 1,
        "tail": 200.5,
        "first": 167.6,
    },
}
#: The reference's own spread over seeds where its published figure is one
#: draw of a wide distribution: the 16-node incast's first FCT over seeds
#: 1-20 (`htsim_uec -tm incast.cm -end 3000 -sender_cc_only -seed S`,
#: measured on this project's machine; docs/calibration.md section 9).
UET_REFERENCE_SEEDS = {("16-node incast", "first"): (1477.4, 230.0)}
KNOWN_UET = {
    (
        "16-node incast",
        "first",
    ): "the published first FCT is one draw (seed 13) of the reference's own spread",
}


#: Oversubscribed fabrics: the reference's own 128-host topologies
#: (uet-htsim 40ccb05 `datacenter/topologies/fat_tree_128_{1,4,8}os.topo`)
#: as cnsim's `pods` generator (8 pods of 4 racks of 4 hosts; fabric
#: switches per pod, spines per plane), under cnsim's built-in permutation
#: (host i to i + 64, 2,000,000 bytes each; every flow crosses the core).
#: The reference's figures are its run of that same permutation written as
#: a matrix (`i->(i+64)%128 id i+1 start 0 size 2000000`): `htsim_uec -tm
#: perm_half_128.cm -topo topologies/fat_tree_128_Nos.topo -sender_cc_only
#: -paths 128`, the sender-side completions: (fabric_per_pod,
#: spines_per_plane, median, slowest, trimmed packets).
OVERSUBSCRIBED: dict[str, tuple[int, int, float, float, int]] = {
    "1:1": (4, 4, 189.964, 196.175, 0),
    "4:1 (one core uplink per aggregation switch)": (4, 1, 644.203, 750.36, 7397),
    "8:1 (one uplink per rack, two per aggregation switch)": (1, 2, 1269.75, 1403.36, 7789),
}


def oversubscribed_scenario(fabric_per_pod: int, spines_per_plane: int) -> Scenario:
    """uet_fattree on the reference's 128-host pods under the permutation."""
    topology = {
        "generator": "pods",
        "pods": 8,
        "racks_per_pod": 4,
        "hosts_per_rack": 4,
        "fabric_per_pod": fabric_per_pod,
        "spines_per_plane": spines_per_plane,
    }
    workload = {"kind": "permutation", "size_bytes": 2_000_000, "header_bytes": 64}
    return load("uet_fattree").replace(
        seeds=[0], duration_ms=20.0, topology=topology, workload=workload, **{"uet.paths": 128}
    )


#: Degraded links: the reference's `-failed N` (docs/uet.md, "Degraded
#: links"), its picks as cnsim `link_rate` events with `scale_buffers`
#: (`cnsim.degraded`). Per case: the fabric (None: the 1,024-host K-ary fat
#: tree under perm_1024n_1024c_0u_2000000b.cm; else fabric_per_pod and
#: spines_per_plane of the 128-host pods under the permutation i -> i + 64,
#: as OVERSUBSCRIBED), N, and the reference's median and slowest
#: sender-side completions (us) and NACKs. Measured on this project's
#: machine with uet-htsim 40ccb05: `htsim_uec -tm
#: connection_matrices/perm_1024n_1024c_0u_2000000b.cm -sender_cc_only
#: -end 5000 -paths 128 -failed N`, and `htsim_uec -tm perm_half_128.cm
#: -topo topologies/fat_tree_128_Nos.topo -sender_cc_only -end 5000 -paths
#: 128 -failed N`. The 1,024-host -failed 8 run is also the reference's own
#: published regression figure (`validate_outputs/
#: validate_load_balancing_failed_snd.out`, "mixed, 4SACK/packet": tail
#: 219.554 us, 598 NACKs, the same to the digit).
DEGRADED: dict[str, tuple[tuple[int, int] | None, int, float, float, int]] = {
    "1,024-host fat tree, -failed 8 (the 8 core links into F0_0)": (None, 8, 194.466, 219.554, 598),
    "1,024-host fat tree, -failed 64 (every core link into pod 0)": (None, 64, 193.327, 685.146, 4367),
    "128-host 1:1, -failed 4 (the 4 core links into F0_0)": ((4, 4), 4, 191.885, 243.152, 366),
    "128-host 1:1, -failed 16 (every core link into pod 0)": ((4, 4), 16, 191.040, 718.310, 1309),
    "128-host 4:1, -failed 8 (the core links into F0_0 and F0_1)": ((4, 1), 8, 661.213, 1095.970, 7852),
}


def degraded_scenario(fabric: tuple[int, int] | None, failed: int) -> Scenario:
    """The reference's `-failed` on a DEGRADED fabric, as cnsim events."""
    from .degraded import events, failed_pods

    if fabric is None:
        base = load("uet_fattree").replace(seeds=[0], **{"uet.paths": 128})
        links = failed_pods(16, 8, 8, failed)
    else:
        base = oversubscribed_scenario(*fabric)
        links = failed_pods(8, *fabric, failed)
    return base.replace(events=events(links, 100.0))


def uet_scenario(case: dict[str, Any]) -> Scenario:
    """The built-in uet_fattree scenario set to one of UET_CASES."""
    return load("uet_fattree").replace(
        seeds=range(case["seeds"]),
        **{
            "topology.hosts": case["hosts"],
            "workload.file": case["file"],
            "uet.paths": case["paths"],
            "uet.cc": case.get("cc", "nscc"),
        },
    )


def uet_fcts(res: Results) -> dict[str, float]:
    """The mean over seeds of each seed's first, median and slowest flow's
    completion (the sender's: fct_acked_us, as the reference prints it)."""
    by: dict[int, list[float]] = {}
    for seed, fct in zip(res.flows["seed"].to_list(), res.flows["fct_acked_us"].to_list(), strict=True):
        if fct is not None:
            by.setdefault(seed, []).append(fct)
    per = [sorted(v) for v in by.values() if v]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else float("nan")

    return {
        "first": mean([v[0] for v in per]),
        "median": mean([v[(len(v) - 1) // 2] for v in per]),
        "tail": mean([v[-1] for v in per]),
        "flows": float(sum(len(v) for v in per)),
    }


def uet(jobs: int | None, progress: bool) -> list[Row]:
    """The Ultra Ethernet transport against its reference simulator's
    published figures (issue 41; docs/calibration.md section 9), each within
    5%: the slowest flow's completion, and the first flow's where given."""
    cases = {k: uet_scenario(c) for k, c in UET_CASES.items()}
    cases |= {f"os {k}": oversubscribed_scenario(f, sp) for k, (f, sp, *_) in OVERSUBSCRIBED.items()}
    cases |= {f"degraded {k}": degraded_scenario(fab, n) for k, (fab, n, *_) in DEGRADED.items()}
    got = run_many(cases, "validate uet", jobs, progress)
    s = "uet"
    rows = []
    for name, (fabric, _, median, tail, nacks) in DEGRADED.items():
        res = got[f"degraded {name}"]
        f = uet_fcts(res)
        flows = 1024 if fabric is None else 128
        what = f"degraded links, {name}, 25% rate, queue and ECN thresholds, 128 paths"
        rows.append(Row(s, f"{what}: flows finished", flows, f["flows"], "all", f["flows"] == flows))
        rows.append(_rel(s, f"{what}: median FCT (us), the reference's run", median, f["median"], 0.05))
        rows.append(_rel(s, f"{what}: slowest FCT (us), the reference's run", tail, f["tail"], 0.05))
        got_trims = float(res.metric("frames_trimmed")[0])
        rows.append(_rel(s, f"{what}: packets trimmed, the reference's NACKs", nacks, got_trims, 0.10))
    for name, (_, _, median, tail, trims) in OVERSUBSCRIBED.items():
        res = got[f"os {name}"]
        f = uet_fcts(res)
        what = f"128-host fat tree {name}, permutation i -> i + 64 of 2 MB, 128 paths"
        rows.append(Row(s, f"{what}: flows finished", 128, f["flows"], "all", f["flows"] == 128))
        rows.append(
            _rel(s, f"{what}: median FCT (us), the reference on the same flows", median, f["median"], 0.05)
        )
        rows.append(
            _rel(s, f"{what}: slowest FCT (us), the reference on the same flows", tail, f["tail"], 0.05)
        )
        if trims:
            got_trims = float(res.metric("frames_trimmed")[0])
            rows.append(_rel(s, f"{what}: packets trimmed, the reference's NACKs", trims, got_trims, 0.10))
    for name, case in UET_CASES.items():
        f = uet_fcts(got[name])
        n = case["seeds"]
        over = f", mean of {n} seeds" if n > 1 else ""
        expected = len(got[name].runs[0].table("flow_records")) * n
        rows.append(Row(s, f"{name}: flows finished", expected, f["flows"], "all", f["flows"] == expected))
        for which in ("tail", "first"):
            if which not in case:
                continue
            row = _rel(s, f"{name}: {which} FCT (us){over}", case[which], f[which], 0.05)
            if not row.ok:
                row.known = KNOWN_UET.get((name, which), "")
            rows.append(row)
            spread = UET_REFERENCE_SEEDS.get((name, which))
            if spread is not None:
                rows.append(
                    _rel(
                        s,
                        f"{name}: {which} FCT (us){over}, vs the reference's mean of 20 seeds",
                        spread[0],
                        f[which],
                        0.05,
                    )
                )
    return rows
