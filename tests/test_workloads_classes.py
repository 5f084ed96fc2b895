"""More workloads beside [workload] ([[workloads]]), each with its hosts,
priority and scheme: the `rdma_tcp` scenario (DCQCN in lossless priority 3
beside DCTCP in lossy priority 0) and the rules that keep two workloads
and two schemes apart."""

from __future__ import annotations

from typing import Any

import cnsim
import pytest
import tomli_w


def _rdma_tcp(**changes: Any) -> cnsim.Scenario:
    """rdma_tcp, short: flows arriving for 3 ms."""
    sc = cnsim.load("rdma_tcp")
    return sc.replace(**{"workload.end_ms": 3.0, "duration_ms": 30.0, **changes})


def _doc(sc: cnsim.Scenario) -> dict[str, Any]:
    import copy

    return copy.deepcopy(sc.raw)


def test_rdma_beside_tcp_keeps_the_lossless_class_lossless_and_runs_each_flow_under_its_scheme():
    sc = _rdma_tcp()
    cfg = sc.engine_config()
    # The workloads' priorities are their senders'; priority 0 runs DCTCP.
    prio = {s["name"]: s["priority"] for s in cfg["stations"]}
    assert prio["H0"] == 3 and prio["H4"] == 0 and prio["H27"] == 3 and prio["H31"] == 0
    assert cfg["class_scheme"]["priorities"] == [0]
    assert cfg["class_scheme"]["scheme"]["name"] == "dctcp"
    r = cnsim.run(sc)
    keys = (
        "throughput_priority_3 throughput_priority_0 flows_completed flows_started flows_completed_priority_0 "
        "flows_completed_priority_3 pfc_frames_priority_3 pfc_frames_priority_0 buffer_drops_priority_3 "
        "headroom_drops_priority_3 fct_mean_us_priority_0"
    ).split()
    m = {k: r.metric(k)[0] for k in keys}
    # Both classes carry traffic and every flow of both finishes.
    assert m["throughput_priority_3"] > 1 and m["throughput_priority_0"] > 1
    assert m["flows_completed"] == m["flows_started"] > 0
    assert m["flows_completed_priority_0"] + m["flows_completed_priority_3"] == m["flows_completed"]
    # PFC pauses priority 3 only, which loses nothing; priority 0 is never paused.
    assert m["pfc_frames_priority_3"] > 0 and m["pfc_frames_priority_0"] == 0
    assert m["buffer_drops_priority_3"] == 0 and m["headroom_drops_priority_3"] == 0
    # Each flow's scheme: the run differs from one where DCQCN runs both.
    one = _doc(sc)
    del one["workloads"][0]["scheme"]
    r1 = cnsim.run(cnsim.Scenario(one))
    assert "class_scheme" not in cnsim.Scenario(one).engine_config()
    assert r1.metric("fct_mean_us_priority_0")[0] != m["fct_mean_us_priority_0"]


def test_the_run_scheme_for_the_first_workload_and_a_parameter_of_the_second_is_accepted():
    sc = _rdma_tcp(scheme="hpcc", **{"dctcp.k_bytes": 40_000})
    cfg = sc.engine_config()
    assert cfg["scheme"]["name"] == "hpcc" and cfg["class_scheme"]["scheme"]["k_bytes"] == 40_000
    # The second workload's scheme as the run's: one scheme, no second.
    assert "class_scheme" not in _rdma_tcp(scheme="dctcp").engine_config()


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda d: d["workloads"][0].pop("priority"), "workloads[0].priority"),
        (lambda d: d["workloads"][0].update(priority=3), "workloads[0].priority"),
        (lambda d: d["workloads"][0].update(rto_us=100.0), "workloads[0].rto_us"),
        (lambda d: d["workloads"][0].update(scheme="swift"), "workloads.scheme"),
        (lambda d: d["workloads"][0].update(scheme="fastcc"), "workloads[0].scheme"),
        (lambda d: d["workloads"][0].update(priority=9), "workloads[0].priority"),
        (lambda d: d["workloads"][0].update(load=1.5), "workloads[0].load"),
        (lambda d: d["workloads"][0].update(cdf="/no/such.cdf"), "workloads[0].cdf"),
        (lambda d: d["workloads"][0].update(hosts=["H0", "H4"]), "workloads[0].priority"),
        (lambda d: d.pop("workload"), "workloads"),
        (
            lambda d: d["workloads"].append({**d["workloads"][0], "scheme": "hpcc", "hosts": ["H4", "H5"]}),
            "third scheme",
        ),
    ],
)
def test_bad_workloads_exit_2_naming_the_parameter(tmp_path, refused, edit, named):
    doc = _doc(_rdma_tcp())
    edit(doc)
    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(doc))
    lines = refused(tmp_path, f)
    assert len(lines) == 1 and named in lines[0], lines


def test_the_flow_level_model_refuses_two_schemes():
    with pytest.raises(cnsim.ScenarioError, match="runs one scheme"):
        _rdma_tcp(fidelity="flow").compiled()


def test_an_incast_beside_a_poisson_background_adds_its_flows():
    sc = cnsim.load("flows_websearch").replace(
        **{"workload.end_ms": 2.0, "duration_ms": 20.0, "workload.load": 0.2}
    )
    doc = _doc(sc)
    doc["workloads"] = [
        {"kind": "incast", "fan_in": 20, "receiver": "H0", "size_bytes": 64_000, "start_ms": 1.0}
    ]
    both = cnsim.Scenario(doc)
    t = both.engine_config()["transport"]
    assert len(t["flows"]) == 20 and len(t["arrivals"]) == 1
    r = cnsim.run(both)
    assert r.metric("flows_completed")[0] == r.metric("flows_started")[0]
    assert (
        sum(1 for row in r.flows.iter_rows(named=True) if row["dst"] == "H0" and row["size_bytes"] == 64_000)
        >= 20
    )
