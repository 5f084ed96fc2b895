"""DCQCN with PFC (schemes.md, beyond the 2007 schemes): ECN marking at
dequeue, CNPs from the destination, per-flow rate limiters."""

import cnsim
from cnsim.scenario import load


def _deep(sc):
    # DCQCN's Kmax is 200 KB: it needs deeper buffers than the 2006 baseline's 150 KB.
    return sc.replace(
        **{"bridge.buffer_bytes": 1_000_000, "pause.xoff_bytes": 950_000, "pause.xon_bytes": 900_000}
    )


def test_dcqcn_holds_the_queue_between_kmin_and_kmax_and_shares_fairly():
    res = cnsim.run(_deep(load("baseline", scheme="dcqcn", pause=True, seeds=[0, 1])), progress=False)
    assert min(res.metric("link_utilization")) >= 0.99
    assert max(res.metric("dropped_cp")) == 0
    assert min(res.metric("jain")) > 0.95
    q = res.timeseries("queue_bytes")
    steady = q.filter(q["time_ms"] >= 20.0)["value"]
    assert 5_000 < steady.mean() < 200_000
    assert steady.max() < 950_000, "PFC was not needed to keep the queue"
    # One RL per flow, keyed by the flow's destination.
    assert set(res.timeseries("rl_rate")["key"].unique()) == {"S1|D", "S2|D", "S3|D", "S4|D"}
    assert 0 < max(res.metric("overhead_mbps")) < 20


def test_without_congestion_flows_keep_their_offered_load():
    loads = {f"nodes.S{i}.load": 0.2 for i in range(1, 5)}  # 8 Gbit/s into 10
    res = cnsim.run(load("baseline", scheme="dcqcn", seeds=[0]).replace(**loads), progress=False)
    # A rare burst above Kmin (5 KB) may be marked; nothing more.
    assert res.metric("overhead_mbps")[0] < 0.1
    flows = res.flows
    rates = flows["throughput_gbps_utilization"].to_list()
    assert len(rates) == 4 and all(abs(r - 2.0) < 0.05 for r in rates), rates
