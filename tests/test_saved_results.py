"""Results that are legal but thin are saved and read back whole: a seed that
made no row, a run that traced no queue, a load too small to send anything."""

import json
from pathlib import Path

import cnsim
import polars as pl

TWO = Path(__file__).parent / "data" / "two_to_one.toml"


def test_a_seed_without_flow_rows_is_saved_with_every_other_seed(cli, tmp_path):
    # S1 sends one frame in a hundred seeds' worth of slots: some seeds make none.
    out = tmp_path / "x"
    r = cli(
        "run", str(TWO), "--seeds", "10", "--duration", "1",
        "--set", "nodes.S1.load=0.0005", "--set", "nodes.S2.load=0",
        "--set", "measure.start_ms=0", "--set", "measure.end_ms=1", "--out", str(out), "--no-report",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    flows = pl.read_parquet(out / "flows.parquet")
    assert flows.schema["src"] == pl.String and flows.schema["dst"] == pl.String
    per_seed = flows.group_by("seed").len()
    assert 0 < len(per_seed) < 10, "some seeds have flow rows and some have none"
    res = cnsim.open_results(out)
    assert res.seeds == list(range(10))
    assert len(res.flows) == len(flows)


def test_every_seed_without_rows_still_writes_the_columns(tmp_path):
    sc = cnsim.load(TWO).replace(seeds=[0, 12], duration_ms=0.001)
    sc = sc.replace(**{"nodes.S1.load": 0.0005, "nodes.S2.load": 0.0})
    res = cnsim.run(sc, jobs=1)
    out = res.save(tmp_path / "y", report=False)
    flows = pl.read_parquet(out / "flows.parquet")
    assert len(flows) == 0
    assert flows.schema["src"] == pl.String
    assert cnsim.open_results(out).seeds == [0, 12]


def test_results_without_a_traced_queue_reopen(cli, tmp_path):
    out = tmp_path / "q"
    r = cli("run", str(TWO), "--set", "trace.ports=[]", "--no-report", "--out", str(out))
    assert r.returncode == 0, r.stderr
    q = pl.read_parquet(out / "queues.parquet")
    assert q.columns == ["seed", "port", "lower_bytes", "time_ps", "fraction", "cdf"] and len(q) == 0
    assert q.schema["lower_bytes"] == pl.UInt64
    r = cli("report", str(out))
    assert r.returncode == 0, r.stderr
    assert len(cnsim.open_results(out).queues) == 0


def test_a_load_too_small_for_one_minus_p_sends_nothing(cli):
    def frames(load: str) -> float:
        r = cli(
            "run",
            str(TWO),
            "--set",
            f"nodes.S1.load={load}",
            "--set",
            "nodes.S2.load=0",
            "--json",
            "--no-report",
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["metrics"]["frames"]["mean"]

    # 1 - 1e-17 rounds to 1: the station once sent at 10 Gbit/s (4,167 frames in 5 ms).
    assert frames("1e-17") == 0
    assert frames("1e-320") == 0
    assert 10 < frames("0.01") < 100
