"""Nothing silently wrong, nothing hangs (issue 28): the flow workloads
under bad input, CDF files, saved scenarios that re-run anywhere, values
taken as written, the memory guard, the Python API's arguments, results
directories and `cnsim bench --workload scale`'s child process. Each test
reproduces one of the issue's defects."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cnsim
import polars as pl
import pytest
from cnsim.errors import ScenarioError
from cnsim.scenario import Scenario
from hypothesis import given, settings
from hypothesis import strategies as st

#: An 8-host leaf-spine, Poisson web-search flows for 1 ms, DCQCN + PFC, 5 ms (the issue's fsmall.toml).
FSMALL = """
name = "fsmall"
duration_ms = 5.0
bin_us = 10.0
scheme = "dcqcn"
[topology]
generator = "leafspine"
leaves = 2
spines = 2
hosts_per_leaf = 4
host_gbps = 10.0
spine_gbps = 10.0
[workload]
kind = "poisson"
cdf = "websearch"
load = 0.5
end_ms = 1.0
[bridge]
buffer_mode = "shared"
buffer_bytes = 4000000
[pause]
enabled = true
xoff_bytes = 150000
xon_bytes = 130000
"""


def cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`cnsim ARGS...` in a fresh interpreter (a hang fails at 120 s)."""
    return subprocess.run(
        [sys.executable, "-m", "cnsim", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def refused(p: subprocess.CompletedProcess[str], start: str) -> None:
    """Exit 2 and one error line, starting with `start` (after any warning
    lines, such as the windows a shortened run clips)."""
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    lines = [ln for ln in p.stderr.splitlines() if not ln.startswith("warning: ")]
    assert len(lines) == 1 and lines[0].startswith(start), p.stderr


def fsmall(tmp_path: Path, **changes: Any) -> Scenario:
    f = tmp_path / "fsmall.toml"
    f.write_text(FSMALL)
    return cnsim.load(f, **changes)


def error(fn: Any) -> str:
    with pytest.raises(ScenarioError) as e:
        fn()
    msg = str(e.value)
    assert "\n" not in msg
    return msg


# ------------------------------------------------------- counts before building (items 2, 3)


def test_a_tiny_incast_period_is_refused_before_any_start_time_is_built(monkeypatch):
    # period_us = 0.001 in a 50 ms run: 50 million incasts of 16 flows; the
    # start times were built in Python until MemoryError (40 s).
    import cnsim.workloads as w

    def no_build(*a: Any, **k: Any) -> Any:
        raise AssertionError("flows were built")

    monkeypatch.setattr(w, "transport", no_build)
    msg = error(lambda: cnsim.load("flows_incast", **{"workload.period_us": 0.001}))
    assert msg.startswith("workload: about 798,400,000 flows per run (16 senders x 49,900,000 incasts")
    assert "workload.max_flows = 1,000,000" in msg and "raise workload.period_us" in msg
    # Below 1 ps the period cannot be represented (it was an endless loop).
    msg = error(lambda: cnsim.load("flows_incast", **{"workload.period_us": 1e-7}))
    assert msg.startswith("workload.period_us: 1e-07 is not allowed; expected a number >= 1e-06")


def test_the_cli_refuses_a_tiny_period_at_once():
    refused(
        cli("run", "flows_incast", "--set", "workload.period_us=0.001", "--no-report"),
        "error: --set workload.period_us: workload: about 798,400,000 flows per run",
    )


@settings(max_examples=200, deadline=None)
@given(
    start_us=st.integers(0, 2000),
    span_us=st.integers(1, 3000),
    period_us=st.one_of(st.none(), st.integers(1, 1500), st.floats(0.7, 50)),
    fan_in=st.integers(1, 4),
    duration_ms=st.floats(2.5, 6),
)
def test_the_counted_flows_are_the_flows_built(start_us, span_us, period_us, fan_in, duration_ms):
    from cnsim.workloads import scenario_plan, transport_of

    raw = cnsim.load("flows_incast").raw
    raw["duration_ms"] = duration_ms
    raw["workload"] = {
        "kind": "incast",
        "fan_in": fan_in,
        "start_ms": start_us / 1000,
        "end_ms": (start_us + span_us) / 1000,
        "period_us": period_us,
        "max_flows": 4_000_000,
    }
    if period_us is None:
        del raw["workload"]["period_us"]
    m = Scenario(raw).model
    flows = transport_of(m)["flows"]
    assert scenario_plan(m).flows == len(flows)
    end = round(min(m.workload.end_ms, duration_ms) * 1e9)
    starts = sorted({f["start_ps"] for f in flows})
    assert starts[0] == round(m.workload.start_ms * 1e9) and starts[-1] < end


def test_poisson_flows_are_counted_and_capped_by_workload_max_flows(tmp_path):
    (tmp_path / "one.cdf").write_text("1 0\n1 1\n")
    cdf = str(tmp_path / "one.cdf")
    # 1-byte flows at 0.5 of 10 Gbit/s: 625 M flows/s at each of 8 hosts.
    msg = error(lambda: fsmall(tmp_path, **{"workload.cdf": cdf, "workload.end_ms": 1.0}))
    assert msg.startswith(
        "workload: about 5,000,000 flows per run (load 0.5 x 8 hosts x 10 Gbit/s x 1 ms / mean size 1 bytes), "
        "more than workload.max_flows = 1,000,000; lower workload.load"
    )
    sc = fsmall(tmp_path, **{"workload.cdf": cdf, "workload.end_ms": 0.01})
    from cnsim.workloads import scenario_plan

    assert scenario_plan(sc.model).flows == pytest.approx(50_000)
    error(lambda: sc.replace(**{"workload.max_flows": 40_000}))
    error(lambda: sc.replace(**{"workload.max_flows": 5_000_000}))  # above what the engine indexes


def test_a_zero_size_cdf_is_refused(tmp_path):
    (tmp_path / "zero.cdf").write_text("0 0\n0 1\n")
    msg = error(lambda: fsmall(tmp_path, **{"workload.cdf": str(tmp_path / "zero.cdf")}))
    assert msg.endswith("every size is below 1 byte; flows need at least 1 byte")


@pytest.mark.slow
def test_a_million_one_byte_flows_run_to_the_end_with_every_frame_accounted(tmp_path):
    # 1 M flows took 52 s (a station's RLs were a vector searched and shifted
    # on every removal, and each pick walked past every flow waiting for its
    # ACK); the engine's ring is now O(log n) per flow.
    (tmp_path / "one.cdf").write_text("1 0\n1 1\n")
    sc = fsmall(
        tmp_path, **{"workload.cdf": str(tmp_path / "one.cdf"), "workload.end_ms": 0.2, "bin_us": 1000.0}
    )
    res = cnsim.run(sc, progress=False)
    m = res.summary_dict()["metrics"]
    assert m["flows_started"]["mean"] > 990_000
    f = res.runs[0].frames
    assert f["generated"] == f["delivered"] + f["dropped_cp"] + f["in_flight"]


# ------------------------------------------------------- hosts and times (items 4, 5)


@pytest.mark.parametrize("hosts", [["H0", "H1", "H1", "H1"], ["H0", "H0"]])
def test_a_host_listed_twice_is_refused(hosts):
    # ["H0","H1","H1","H1"] made 63 of 104 flows H1->H1; ["H0","H0"] ran with no flows.
    msg = error(lambda: cnsim.load("flows_incast", **{"workload.hosts": hosts, "workload.fan_in": 1}))
    assert msg.startswith(f"workload.hosts: '{hosts[1]}' is listed twice")


def test_a_flow_run_with_no_flow_reports_zero_and_null(tmp_path):
    sc = fsmall(tmp_path, **{"workload.load": 0.001, "workload.end_ms": 0.01})
    m = cnsim.run(sc, progress=False).summary_dict()["metrics"]
    assert m["flows_started"]["mean"] == 0 and m["flows_completed"]["mean"] == 0
    assert m["slowdown_p50"]["mean"] is None and m["fct_mean_us"]["mean"] is None


@pytest.mark.parametrize(
    ("changes", "start"),
    [
        (
            {"workload.start_ms": 60},
            "workload.start_ms: 60 is not allowed; expected a time before the run's end",
        ),
        # start_ms < end_ms: [workload]'s declared rule, the engine's (sections.rs).
        (
            {"workload.end_ms": 0},
            "workload.start_ms / workload.end_ms: 0.1 / 0 not allowed; expected start_ms < end_ms",
        ),
        ({"workload.end_ms": 0.1}, "workload.start_ms / workload.end_ms: 0.1 / 0.1 not allowed"),
    ],
)
def test_flows_outside_the_run_are_refused(changes, start):
    # start_ms = 60 in a 50 ms run counted 16 flows started with 0 frames.
    assert error(lambda: cnsim.load("flows_incast", **changes).engine_config_checked()).startswith(start)


# ------------------------------------------------------- CDF files (items 6, 11)


def test_a_saved_scenario_reruns_elsewhere_with_its_cdf_inside(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "fsmall.toml").write_text(FSMALL)
    (work / "good.cdf").write_text("1000 0\n5000 1\n")
    p = cli(
        "run",
        "fsmall.toml",
        "--set",
        'workload.cdf="good.cdf"',
        "--out",
        "r",
        "--no-report",
        "--json",
        cwd=work,
    )
    assert p.returncode == 0, p.stderr
    first = json.loads(p.stdout)["metrics"]
    saved = (work / "r" / "scenario.toml").read_text()
    import hashlib
    import tomllib

    w = tomllib.loads(saved)["workload"]
    assert w["cdf"] == [[1000.0, 0.0], [5000.0, 1.0]]
    assert w["cdf_source"] == "good.cdf sha256:" + hashlib.sha256(b"1000 0\n5000 1\n").hexdigest()
    # The file changes; the saved scenario, run from elsewhere, still runs the same flows.
    (work / "good.cdf").write_text("1 0\n2 1\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    p = cli("run", str(work / "r" / "scenario.toml"), "--out", "r2", "--no-report", "--json", cwd=other)
    assert p.returncode == 0, p.stderr
    again = json.loads(p.stdout)["metrics"]
    for k in ("flows_started", "fct_mean_us", "slowdown_p99"):
        assert again[k]["mean"] == first[k]["mean"], k
    a = pl.read_parquet(work / "r" / "flows.parquet")
    b = pl.read_parquet(other / "r2" / "flows.parquet")
    assert a.equals(b)


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ("1000 0\n2000 1\n".encode("utf-16"), "is not UTF-8 text"),
        (bytes(range(256)), "is not UTF-8 text"),
        (b"1000 0\n2000 0.5\n3000 100\n", "the probabilities before the last are fractions"),
    ],
    ids=["utf-16", "binary", "fractions then 100"],
)
def test_a_bad_cdf_file_is_named(tmp_path, content, what):
    f = tmp_path / "bad.cdf"
    f.write_bytes(content)
    msg = error(lambda: fsmall(tmp_path, **{"workload.cdf": str(f)}))
    assert msg.startswith(f"workload.cdf: {'' if 'fractions' in what else chr(39)}{f}") and what in msg


def test_percentages_and_fractions_both_read(tmp_path):
    from cnsim.workloads import load_cdf

    (tmp_path / "pct.cdf").write_text("1000 0\n2000 50\n3000 100\n")
    (tmp_path / "frac.cdf").write_text("1000 0\n2000 0.5\n3000 1\n")
    assert load_cdf(str(tmp_path / "pct.cdf")) == load_cdf(str(tmp_path / "frac.cdf"))
    assert load_cdf([[1000, 0], [2000, 0.5], [3000, 1]]) == load_cdf(str(tmp_path / "frac.cdf"))


# ------------------------------------------------------- the command line (items 12, 13, 14)


def test_default_results_directories_are_unique():
    from cnsim.outdir import default_dir

    names = {default_dir("x") for _ in range(50)}
    assert len(names) == 50


@pytest.mark.slow
def test_three_runs_started_at_once_keep_three_directories(tmp_path):
    (tmp_path / "fsmall.toml").write_text(FSMALL)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "cnsim", "run", "fsmall.toml", "--no-report"],
            cwd=tmp_path,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(3)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0], [p.stderr.read() for p in procs]
    made = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert len(made) == 3 and all(n.startswith("fsmall-") for n in made), made


def test_no_lock_file_is_left_beside_results(tmp_path):
    (tmp_path / "fsmall.toml").write_text(FSMALL)
    p = cli("run", "fsmall.toml", "--out", "r", "--no-report", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["fsmall.toml", "r"]
    res = cnsim.open_results(tmp_path / "r")
    res.save(tmp_path / "s", report=False)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["fsmall.toml", "r", "s"]


def test_a_lock_whose_file_was_removed_is_taken_again(tmp_path):
    # A run that took the lock file just as another removed it must not
    # hold a lock nobody else can see.
    from cnsim.outdir import RunDir

    a = RunDir(tmp_path / "x")
    lock = tmp_path / ".x.lock"
    assert lock.exists()
    with pytest.raises(ScenarioError, match="another cnsim run is writing"):
        RunDir(tmp_path / "x")
    a.abort()
    assert not lock.exists()
    b = RunDir(tmp_path / "x")
    assert lock.exists() and os.fstat(b._lock._fd).st_ino == lock.stat().st_ino
    b.abort()


def test_bench_scale_refuses_a_size_before_saying_it_runs():
    p = cli("bench", "--workload", "scale", "--hosts", "5")
    refused(p, "error: --hosts: 5 is not allowed; expected fat-tree sizes (64, 512, 1000, 1024, 4096)")
    assert "running" not in p.stdout + p.stderr
    refused(cli("bench", "--workload", "bogus"), "error: --workload: 'bogus' is not allowed")
    assert "scale" in cli("bench", "--workload", "bogus").stderr


def test_scheme_pause_with_no_pause_is_a_contradiction():
    refused(
        cli("run", "flows_incast", "--scheme", "pause", "--no-pause"), "error: scheme / pause: scheme 'pause'"
    )
    # PAUSE on, or another scheme without it, is fine.
    assert cnsim.load("baseline").replace(scheme="pause").pause
    assert not cnsim.load("flows_incast").replace(scheme="nocm", pause=False).pause


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_bench_scale_ends_its_child_when_stopped_by_pid(sig):
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cnsim",
            "bench",
            "--workload",
            "scale",
            "--hosts",
            "64",
            "--duration-ms",
            "100000",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        child = None
        for _ in range(300):  # the child starts once the parent has checked its input
            child = _child_of(p.pid)
            if child is not None:
                break
            time.sleep(0.1)
        assert child is not None, "no child started"
        time.sleep(1.0)
        os.kill(p.pid, sig)
        assert p.wait(timeout=30) == 130
        for _ in range(100):
            if not _alive(child):
                break
            time.sleep(0.1)
        assert not _alive(child), "the child still runs"
    finally:
        p.kill()


@pytest.mark.slow
def test_a_scale_child_whose_parent_is_killed_stops_by_itself():
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cnsim",
            "bench",
            "--workload",
            "scale",
            "--hosts",
            "64",
            "--duration-ms",
            "100000",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    child = None
    for _ in range(300):
        child = _child_of(p.pid)
        if child is not None:
            break
        time.sleep(0.1)
    assert child is not None
    time.sleep(1.0)
    p.kill()  # SIGKILL: the parent cannot stop it
    p.wait()
    for _ in range(100):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)


def _child_of(pid: int) -> int | None:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if (
                int(stat.rsplit(")", 1)[1].split()[1]) == pid
                and b"cnsim.benchscale" in (d / "cmdline").read_bytes()
            ):
                return int(d.name)
    return None


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# ------------------------------------------------------- values as written, the API (item 16)


@pytest.mark.parametrize(
    ("sets", "start"),
    [
        (
            ["dcqcn.fr_thr=9223372036854775807"],
            "error: --set dcqcn.fr_thr: 9223372036854775807 is not allowed",
        ),
        (
            ["duration_ms='5'"],
            "error: --set duration_ms: '5' is not allowed; expected a number, not a string",
        ),
        (
            ["workload.load='0.5'"],
            "error: --set workload.load: '0.5' is not allowed; expected a number, not a",
        ),
        (
            ["stats.per_flow='yes'"],
            "error: --set stats.per_flow: 'yes' is not allowed; expected true, false or",
        ),
        (
            ["stats.per_flow=1"],
            "error: --set stats.per_flow: 1 is not allowed; expected true, false or 'auto'",
        ),
        (
            ["workload.hosts=['H0','H1','H1','H1']", "workload.fan_in=1"],
            "error: --set workload.hosts: 'H1' is listed",
        ),
    ],
)
def test_values_are_taken_as_written(sets, start):
    args = ["run", "flows_incast", "--scheme", "dcqcn", "--no-report"]
    for s in sets:
        args += ["--set", s]
    refused(cli(*args), start)


def test_a_scheme_integer_above_u32_is_named_in_a_file_too():
    msg = error(lambda: cnsim.load("flows_incast", **{"dcqcn.fr_thr": 2**63 - 1}))
    assert msg.startswith(
        "dcqcn.fr_thr: 9223372036854775807 is not allowed; expected an integer <= 4294967295"
    )


def test_a_thousand_part_dotted_header_is_refused(tmp_path):
    f = tmp_path / "deep.toml"
    f.write_text(FSMALL + "\n[" + ".".join(["a"] * 1000) + "]\nx = 1\n")
    refused(cli("run", str(f), "--no-report"), "error: a.a.a...: tables nested 33 deep or more")


@pytest.mark.parametrize("table", [2.5e16, "x", [1]])
def test_scheme_pause_beside_a_pause_that_is_not_a_table_is_named(table):
    # Found by the fuzz harness: an AttributeError in the contradiction check.
    raw = cnsim.load("baseline").raw
    raw.update(scheme="pause", pause=table)
    assert error(lambda: Scenario(raw)).startswith("pause: ")


def test_a_retransmission_timeout_below_a_microsecond_is_refused():
    # Found by the fuzz harness: rto_us = 0.001 resent every frame every
    # nanosecond (a 1 ms incast of 1-byte flows ran for minutes).
    msg = error(lambda: cnsim.load("flows_incast", **{"workload.rto_us": 0.001}))
    assert msg.startswith("workload.rto_us: 0.001 is not allowed; expected a number >= 1")


def test_fluid_refuses_an_infinite_step():
    refused(cli("fluid", "baseline", "--step-us", "inf"), "error: --step-us: inf is not allowed")


@pytest.mark.parametrize("jobs", [2.5, "x", 0, True])
def test_run_and_sweep_refuse_a_bad_jobs(jobs):
    sc = cnsim.load("baseline", seeds=[0]).replace(duration_ms=1.0)
    assert error(lambda: cnsim.run(sc, jobs=jobs, progress=False)).startswith(
        f"--jobs: {jobs!r} is not allowed"
    )
    assert error(lambda: cnsim.sweep(sc, {"bcn.w": [2]}, jobs=jobs)).startswith(
        f"--jobs: {jobs!r} is not allowed"
    )


def test_sweep_refuses_a_grid_that_is_not_a_table():
    sc = cnsim.load("baseline", seeds=[0]).replace(duration_ms=1.0)
    assert error(lambda: cnsim.sweep(sc, grid=["bcn.w", 2])).startswith(
        "grid: list is not allowed; expected a table"
    )


def test_a_grid_value_given_twice_as_int_and_float_is_refused(tmp_path):
    refused(
        cli("sweep", "baseline", "--grid", "bcn.w=1,1.0", "--out", str(tmp_path / "s")),
        "error: --grid bcn.w: value 1.0 given twice (as 1 and 1.0)",
    )
    assert not (tmp_path / "s").exists()


def test_plot_of_an_unknown_series_names_the_known_ones():
    res = cnsim.run(cnsim.load("baseline", seeds=[0]).replace(duration_ms=2.0), progress=False)
    msg = error(lambda: res.plot("nosuch"))
    assert msg.startswith("plot: no series 'nosuch' in these results; series: ") and "queue_bytes" in msg
    assert res.plot("queue_bytes") is not None


# ------------------------------------------------------- the memory guard (item 16)


def test_the_memory_guard_counts_flows(tmp_path, monkeypatch):
    monkeypatch.setenv("CNSIM_MEMORY_CAP", "100M")
    (tmp_path / "one.cdf").write_text("1 0\n1 1\n")
    sc = fsmall(
        tmp_path, **{"workload.cdf": str(tmp_path / "one.cdf"), "workload.end_ms": 0.1, "bin_us": 1000.0}
    )
    msg = error(lambda: cnsim.run(sc, progress=False))
    assert msg.startswith(
        "workload: the run would keep about 286.1 MB (500,000 flows x 1 seed), above the memory cap"
    )


def _limited(limit_bytes: int) -> Any:
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return set_limit


def test_the_memory_guard_respects_the_address_space_limit(tmp_path):
    # Under `ulimit -v 2000000` a run of about 1 GB of series was accepted and
    # ended in MemoryError; it is refused, and a small run still runs.
    args = [sys.executable, "-m", "cnsim", "run", "baseline", "--no-report"]
    big = subprocess.run(
        [*args, "--seeds", "16", "--set", "bin_us=1", "--duration", "50", "--out", str(tmp_path / "a")],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited(2_000_000 * 1024),
    )
    refused(big, "error: bin_us: the run would keep about 927.8 MB of time series")
    assert "address-space limit (ulimit -v)" in big.stderr
    small = subprocess.run(
        [*args, "--seeds", "2", "--out", str(tmp_path / "b")],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited(2_000_000 * 1024),
    )
    assert small.returncode == 0, small.stderr


@pytest.mark.slow
def test_the_memory_estimate_is_not_below_what_a_run_keeps(tmp_path):
    # It was 29% low (200 seeds, bin_us = 1): each seed's series cost 62
    # bytes a value in `cnsim run`, not 48. Peak memory of runs of 2 and 6
    # seeds: the difference is what 4 seeds keep, and the estimate of 4
    # seeds must cover it.
    from cnsim.guards import run_memory

    peaks = []
    for n in (2, 6):
        run = [sys.executable, "-m", "cnsim", "run", "baseline", "--seeds", str(n), "--set", "bin_us=1"]
        run += ["--duration", "50", "--no-report", "--jobs", "1", "--out", str(tmp_path / str(n))]
        # The peak of this one child, measured by a parent of its own.
        code = (
            "import resource, subprocess, sys; "
            f"subprocess.run({run!r}, check=True, stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True
        )
        peaks.append(int(out.stdout.split()[-1]) * 1024)
    kept = peaks[1] - peaks[0]
    est = run_memory(cnsim.load("baseline", seeds=4).replace(bin_us=1.0, duration_ms=50.0)).total
    assert est >= kept, (est, kept)
    # And not far above: what a seed keeps varies from 14 to 28 B a value
    # with the allocator's reuse of freed memory (a clean-clone CI run saw
    # 12.8: 96.9 MB against 107 MB here); the guard's 32 is the upper end.
    assert est < 3 * kept, (est, kept)
