"""Collective jobs (issue 42): the built-in scenarios run and report per
collective and per iteration, a lone ring all-reduce reaches the payload
rate, results repeat to the byte on one core and on two, and bad jobs are
refused in one line naming the key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cnsim
import polars as pl
import pytest


def _job(**phase: object) -> list[dict[str, object]]:
    return [
        {"name": "j", "ranks": 8, "phases": [{"collective": "allreduce", "size_bytes": 4 << 20, **phase}]}
    ]


def test_a_lone_ring_allreduce_comes_close_to_the_payload_rate(tmp_path: Path):
    r = cnsim.run(cnsim.load("allreduce_ring"), progress=False)
    c = r.collectives.row(0, named=True)
    assert c["collective"] == "allreduce" and c["algorithm"] == "ring" and c["ranks"] == 8
    # 2 (n - 1) steps x 8 ranks x 4 chunks of the 4 MB segment.
    assert c["flows"] == 14 * 8 * 4
    assert c["payload_gbps"] == pytest.approx(100 * 4032 / 4096)
    assert 0.95 <= c["busbw_gbps"] / c["payload_gbps"] <= 1.0
    assert c["vs_ideal"] == pytest.approx(c["payload_gbps"] / c["busbw_gbps"])
    assert r.metric("collectives_completed")[0] == 1
    out = r.save(tmp_path / "out", report=False)
    got = pl.read_parquet(out / "collectives.parquet")
    assert got["busbw_gbps"].to_list() == r.collectives["busbw_gbps"].to_list()
    assert len(pl.read_parquet(out / "iterations.parquet")) == 1


def test_two_jobs_iterate_and_each_iteration_follows_the_last():
    r = cnsim.run(cnsim.load("training_two_jobs"), progress=False)
    c, it = r.collectives, r.iterations
    assert len(c) == 2 * 3 * 2, "two jobs x three iterations x two phases"
    assert c["time_us"].is_finite().all()
    for job in ("A", "B"):
        rows = it.filter(pl.col("job") == job).sort("iteration")
        assert rows["step_time_us"].is_finite().all()
        assert rows["start_ps"].to_list()[1:] == rows["end_ps"].to_list()[:-1]
    # Sharing the fabric costs them against an idle one.
    assert c["vs_ideal"].min() > 1.0


def test_a_shift_alltoall_sends_every_pair_and_meets_at_receivers():
    sc = cnsim.load("alltoall_fattree").replace(
        **{"topology.hosts": 16},
        jobs=[
            {"ranks": 16, "phases": [{"collective": "alltoall", "algorithm": "shift", "size_bytes": 1 << 20}]}
        ],
    )
    r = cnsim.run(sc, progress=False)
    f = r.flows
    assert len(f) == 16 * 15
    assert f.select(pl.struct("src", "dst").n_unique()).item() == 16 * 15
    c = r.collectives.row(0, named=True)
    assert c["max_senders"] > 1


def test_results_are_identical_on_one_core_and_on_two(tmp_path: Path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    for out, jobs in ((a, "1"), (b, "2")):
        subprocess.run(
            [sys.executable, "-m", "cnsim", "run", "training_two_jobs", "--seeds", "2", "--jobs", jobs]
            + ["--out", str(out), "--no-report"],
            check=True,
            capture_output=True,
        )
    for name in ("collectives.parquet", "iterations.parquet", "flows.parquet"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.parametrize(
    ("jobs", "key", "words"),
    [
        (_job(), "", ""),
        (
            [{"ranks": 8, "hosts": ["H0", "X9"], "placement": "listed", "phases": _job()[0]["phases"]}],
            "jobs[0].hosts",
            "X9",
        ),
        (_job(size_bytes=0), "jobs[0].phases[0].size_bytes", "0"),
        ([{"ranks": 64, "phases": _job()[0]["phases"]}], "jobs[0].ranks", "allow_shared_hosts"),
        (_job(collective="alltoall", algorithm="ring"), "jobs[0].phases[0].algorithm", "pairwise"),
        (_job(collective="broadcast", root=9), "jobs[0].phases[0].root", "9"),
    ],
)
def test_bad_jobs_exit_2_naming_the_key(tmp_path: Path, jobs: list, key: str, words: str):
    f = tmp_path / "s.toml"
    builtin = (Path(cnsim.__file__).parent / "scenarios" / "allreduce_ring.toml").read_text()
    head, _, tail = builtin.partition("[topology]")
    tail = tail.partition("[[jobs]]")[0]
    inline = json.dumps(jobs).replace('":', '" =')
    f.write_text(head + "jobs = " + inline + "\n[topology]" + tail)
    p = subprocess.run(
        [sys.executable, "-m", "cnsim", "run", str(f), "--out", str(tmp_path / "o"), "--no-report"],
        capture_output=True,
        text=True,
    )
    if not key:
        assert p.returncode == 0, p.stderr
        return
    assert p.returncode == 2, p.stderr
    lines = [x for x in p.stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and key in lines[0] and words in lines[0], p.stderr
    assert "Traceback" not in p.stderr


def test_a_chunk_larger_than_its_message_is_warned():
    sc = cnsim.load("allreduce_ring").replace(jobs=_job(size_bytes=100_000, chunk_bytes=1 << 20))
    with pytest.warns(cnsim.ScenarioWarning, match=r"jobs\[0\]\.phases\[0\]\.chunk_bytes"):
        cnsim.run(sc, progress=False)


def test_the_planned_pairwise_alltoall_is_the_reference_matrix_of_the_same_gates(tmp_path: Path):
    """The planner's pairwise all-to-all and the same exchange written as the
    Ultra Ethernet reference's connection matrix (scripts/alltoall_matrix.py:
    barrier triggers per pair and round) are one set of gates: every flow
    finishes at the same picosecond."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "alltoall_matrix", Path(__file__).parents[1] / "scripts" / "alltoall_matrix.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cm = tmp_path / "a2a.cm"
    cm.write_text(mod.pairwise(16, 65536, 2))
    base = cnsim.load("alltoall_fattree").replace(seeds=[0], **{"topology.hosts": 16})
    job = {
        "name": "a2a",
        "ranks": 16,
        "phases": [
            {
                "collective": "alltoall",
                "algorithm": "pairwise",
                "size_bytes": 16 * 65536,
                "chunks_in_flight": 2,
            }
        ],
    }
    planned = cnsim.run(base.replace(jobs=[job]), progress=False)
    matrix = cnsim.run(
        base.replace(jobs=[], **{"workload.kind": "matrix", "workload.file": str(cm)}), progress=False
    )
    key = ["src", "dst", "start_ps", "finish_ps"]
    assert len(planned.flows) == len(matrix.flows) == 16 * 15
    assert planned.flows.select(key).sort(key).equals(matrix.flows.select(key).sort(key))
    # Rounds 3 on waited: a flow's start is another's finish.
    finishes = set(planned.flows["finish_ps"].to_list())
    late = planned.flows.filter(pl.col("start_ps") > 0)["start_ps"].to_list()
    assert len(late) == 16 * 13 and all(t in finishes for t in late)
    assert planned.collectives["end_ps"][0] == planned.flows["finish_ps"].max()


def test_whole_run_metrics_do_not_turn_the_compiled_config_into_python_data():
    """A run of millions of planned flows must not make one dict per flow to
    read a station's priority: the metrics read only the stations' part of
    the compiled config (Scenario.engine_part)."""
    sc = cnsim.load("training_two_jobs").replace(seeds=[0])
    r = cnsim.run(sc, progress=False)
    assert r.metric("collectives_completed")[0] == 12  # 2 jobs x 3 iterations x 2 phases
    assert sc._engine_config is None
    stations = sc.engine_part("stations")
    assert {s["name"] for s in stations} >= {"H0", "H1"}
    with pytest.raises(KeyError, match="stations, bridges or scheme"):
        sc.compiled().part("transport")


def test_the_slowdown_figure_draws_one_flow_in_k_past_its_limit(monkeypatch):
    """Millions of flows: the scatter draws every k-th (deterministic), the
    label says so, and the percentiles are still of every flow."""
    from cnsim.report import figures

    r = cnsim.run(cnsim.load("training_two_jobs").replace(seeds=[0]), progress=False)
    n = len(r.flows)
    whole = figures.slowdown_fig(r).axes[0].collections[0].get_offsets()
    assert len(whole) == n
    monkeypatch.setattr(figures, "SCATTER_FLOWS", 100)
    ax = figures.slowdown_fig(r).axes[0]
    k = -(-n // 100)
    drawn = ax.collections[0].get_offsets()
    assert len(drawn) == -(-n // k) <= 100
    assert (drawn == whole[::k]).all()
    assert ax.get_legend().get_texts()[0].get_text() == f"flows (one in {k} drawn)"


def test_the_fct_table_is_the_same_bits_in_python_and_in_numpy():
    """Large runs compute the FCT table in numpy, small ones per value in
    Python: the same values, nulls and types, on finished, unfinished and
    unacknowledged flows."""
    from cnsim import metrics

    for name, kw in [
        ("flows_websearch", {"duration_ms": 2.0}),
        ("uet_fattree", {"topology.hosts": 16, "workload.file": "incast.cm"}),
    ]:
        run = cnsim.run(cnsim.load(name).replace(seeds=[0], **kw), progress=False).runs[0]
        t = run.table("flow_records")
        a, b = metrics._fct_table(t), metrics._fct_table_numpy(t)
        cols = ["start_us", "finish_us", "fct_us", "fct_acked_us", "ideal_fct_us", "slowdown"]
        assert a.columns == b.columns
        for c in cols:
            x, y = list(a[c]), list(b[c])
            assert [type(v) for v in x] == [type(v) for v in y], c
            assert [v if v is None or v == v else "nan" for v in x] == [
                v if v is None or v == v else "nan" for v in y
            ], c
        if name == "flows_websearch":
            assert any(v is None for v in a["fct_us"]) and any(v is not None for v in a["fct_us"])
