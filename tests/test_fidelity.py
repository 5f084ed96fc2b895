"""The flow-level model (`fidelity = "flow"`, issue 44) against the packet
model on the same scenario: the same flows, determinism, clear refusals.
Small fabrics only (seconds); the grid of docs/flow-level.md is run by
`cnsim compare-fidelity`, not here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import cnsim
import polars as pl
import pytest
from cnsim.errors import ScenarioError
from cnsim.runner import run

SMALL = """
name = "small_flows"
duration_ms = 100.0
seeds = 1
bin_us = 100.0
scheme = "dctcp"

[topology]
generator = "leafspine"
leaves = 4
spines = 2
hosts_per_leaf = 8
host_gbps = 10.0
spine_gbps = 40.0

[workload]
kind = "poisson"
cdf = "websearch"
load = 0.5
end_ms = 20.0

[defaults]
frame_bytes = 1500
link_delay_us = 1.0

[bridge]
buffer_mode = "shared"
buffer_bytes = 4000000
latency_us = 1.0

[station]
processing_us = 1.0
"""

KEYS = ["src", "dst", "size_bytes", "start_ps"]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> cnsim.Scenario:
    path = tmp_path_factory.mktemp("fidelity") / "small_flows.toml"
    path.write_text(SMALL)
    return cnsim.load(str(path))


@pytest.fixture(scope="module")
def both(small: cnsim.Scenario) -> tuple[object, object]:
    return run(small, progress=False), run(small.replace(fidelity="flow"), progress=False)


def test_the_flow_level_model_answers_for_the_packet_models_flows(both: tuple[object, object]) -> None:
    """Same seed, same flows (source, destination, size, start), every one
    of them answered; no flow faster than alone on the idle network."""
    packet, flow = both
    p = packet.flows.select(KEYS).sort(KEYS)
    f = flow.flows.select(KEYS).sort(KEYS)
    assert len(p) > 50
    assert p.equals(f)
    done = flow.flows.filter(pl.col("slowdown").is_not_null())
    assert len(done) == len(flow.flows)  # the run is long enough for every flow
    assert done["slowdown"].min() >= 1.0 - 1e-9
    assert (packet.summary_dict()["fidelity"], flow.summary_dict()["fidelity"]) == ("packet", "flow")


def test_the_flow_level_slowdowns_follow_the_packet_models(both: tuple[object, object]) -> None:
    """The median slowdown of the same flows within 25% of the packet
    model's (this fabric's load is light: most flows are near their ideal)."""
    packet, flow = both
    j = packet.flows.select([*KEYS, "slowdown"]).join(
        flow.flows.select([*KEYS, pl.col("slowdown").alias("flow")]), on=KEYS
    )
    j = j.drop_nulls()
    assert len(j) > 50
    pm, fm = j["slowdown"].median(), j["flow"].median()
    assert abs(fm / pm - 1.0) <= 0.25, (pm, fm)


def test_each_flows_slowdown_is_close_to_its_packet_slowdown(small: cnsim.Scenario) -> None:
    """`cnsim compare-fidelity`'s table: in every size bucket, the median
    over its flows of |slowdown at flow level / slowdown at packet level - 1|
    is within 10% (2-6% when written), and every flow is finished at both."""
    from cnsim.fidelity import compare

    b = compare(small, progress=False).buckets()
    assert (b["finished_packet"] == b["flows"]).all() and (b["finished_flow"] == b["flows"]).all()
    errors = b.filter(pl.col("flows") > 0)["flow_median_error"]
    assert len(errors) >= 5
    assert errors.max() <= 0.10, b


def test_a_default_flow_level_run_warns_of_nothing(small: cnsim.Scenario) -> None:
    """Only what the model approximates for this scenario is said: nothing
    for a lossless DCTCP fabric without a trace; PAUSE when it is on."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert small.replace(fidelity="flow").engine_warnings() == []
    paused = small.replace(fidelity="flow", pause=True).engine_warnings()
    assert any("PAUSE" in w for w in paused)


def test_a_flow_level_run_is_deterministic(small: cnsim.Scenario, both: tuple[object, object]) -> None:
    again = run(small.replace(fidelity="flow"), progress=False)
    cols = [*KEYS, "fct_us"]
    assert both[1].flows.select(cols).equals(again.flows.select(cols))


def test_a_notification_scheme_is_refused_at_flow_level(small: cnsim.Scenario) -> None:
    with pytest.raises(ScenarioError, match="fidelity: 'flow' cannot run scheme bcn"):
        small.replace(fidelity="flow", scheme="bcn").compiled()


def test_cnsim_run_fidelity_flow_refuses_with_exit_2_and_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(SMALL.replace('scheme = "dctcp"', 'scheme = "qcn"'))
    r = subprocess.run(
        [sys.executable, "-m", "cnsim", "run", str(path), "--fidelity", "flow", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "fidelity" in lines[0] and "Traceback" not in r.stderr


def test_the_packet_model_refuses_more_flows_than_it_indexes(small: cnsim.Scenario) -> None:
    from cnsim.scenario.files import apply_sets

    with pytest.raises(ScenarioError, match="workload.max_flows"):
        apply_sets(small, ["workload.max_flows=5000000"])


def test_the_flow_level_node_table_adds_up_to_the_run_totals(both: tuple[object, object]) -> None:
    r = both[1].runs[0]
    nodes = r.tables["nodes"]
    for k in ("generated", "delivered"):
        assert nodes[k].sum() == r.frames[k] > 0, k


def test_flows_pods_is_parsimons_fabric_at_flow_level() -> None:
    """The 6,144-host built-in compiles (the engine's checks, routes of
    every host class) without running."""
    sc = cnsim.load("flows_pods")
    assert sc.model.fidelity == "flow"
    cfg = sc.engine_config_checked()
    assert sum(1 for n in cfg["stations"]) == 8 * 48 * 16
    assert cfg["fidelity"] == "flow"
