"""Nothing lost, nothing mixed, nothing escapes (issue 14): a run's results
directory is complete or absent, never mixed with another run's or written
into the user's files; Ctrl-C stops promptly and keeps what finished;
resources are checked before anything runs; every bad value is named on one
line."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cnsim
import polars as pl
import pytest

TINY = """
name = "{name}"
duration_ms = {duration}
seeds = {seeds}
scheme = "bcn"
[[nodes]]
name = "S1"
kind = "station"
load = 0.5
dest = "D"
[[nodes]]
name = "D"
kind = "station"
[[nodes]]
name = "B"
kind = "bridge"
cp = true
[[links]]
a = "S1"
b = "B"
[[links]]
a = "B"
b = "D"
"""


def _cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cnsim", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )


def _tiny(tmp_path: Path, name: str = "tiny", duration: float = 5.0, seeds: int = 2) -> Path:
    f = tmp_path / "tiny.toml"
    f.write_text(TINY.format(name=name, duration=duration, seeds=seeds))
    return f


def _complete(d: Path) -> bool:
    """A results directory with every file readable, or no directory at all."""
    summary = json.loads((d / "summary.json").read_text())
    for name in ("flows", "links", "nodes", "windows", "runs", "timeseries"):
        pl.read_parquet(d / f"{name}.parquet")
    return bool(summary["seeds"])


# ------------------------------------------------------------------ --out


def test_an_unwritable_out_is_refused_before_anything_runs(monkeypatch):
    r = _cli("run", "fattree_hotspot", "--seed", "0", "--out", "/proc/x")
    assert r.returncode == 2
    assert r.stderr.startswith("error: --out /proc/x: cannot be") and r.stderr.count("\n") == 1
    # Before anything runs: the run itself is never called (not "it was quick").
    import cnsim.runner
    from cnsim.cli import app
    from typer.testing import CliRunner

    ran: list[object] = []
    monkeypatch.setattr(cnsim.runner, "run", lambda *a, **k: ran.append(a))
    got = CliRunner().invoke(app, ["run", "fattree_hotspot", "--seed", "0", "--out", "/proc/x"])
    assert isinstance(got.exception, cnsim.ScenarioError) and str(got.exception).startswith("--out /proc/x")
    assert ran == []


@pytest.mark.slow
def test_rerunning_into_results_needs_force_and_then_replaces_them_whole(tmp_path):
    f = _tiny(tmp_path)
    out = tmp_path / "r"
    assert _cli("run", str(f), "--out", str(out)).returncode == 0
    assert (out / "report.html").exists()
    again = _cli("run", str(f), "--out", str(out), "--seed", "7", "--no-report")
    assert again.returncode == 2 and "already holds results" in again.stderr and "--force" in again.stderr
    forced = _cli("run", str(f), "--out", str(out), "--seed", "7", "--no-report", "--force")
    assert forced.returncode == 0, forced.stderr
    # Replaced whole: the old report is gone, the seeds are the new run's.
    assert not (out / "report.html").exists()
    assert json.loads((out / "summary.json").read_text())["seeds"] == [7]
    assert _complete(out)


@pytest.mark.parametrize("holds", ["the scenario file", "a sweep", "a user's file"])
def test_a_directory_holding_anything_else_is_never_written(tmp_path, holds):
    f = _tiny(tmp_path)
    target = tmp_path if holds == "the scenario file" else tmp_path / "d"
    if holds == "a sweep":
        target.mkdir()
        (target / "sweep.json").write_text("{}")
    elif holds == "a user's file":
        target.mkdir()
        (target / "notes.txt").write_text("mine")
    before = sorted(p.name for p in target.iterdir())
    r = _cli("run", str(f), "--out", str(target), "--force")
    assert r.returncode == 2 and r.stderr.startswith(f"error: --out {target}: holds")
    assert sorted(p.name for p in target.iterdir()) == before
    assert f.read_text().startswith("\nname")


def test_default_paths_stay_under_results_whatever_the_name(tmp_path):
    f = _tiny(tmp_path, name="../../escape/\\n x")
    r = _cli("run", str(f), "--no-report", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    made = [p for p in (tmp_path / "results").iterdir() if not p.name.startswith(".")]
    assert len(made) == 1 and made[0].name.startswith("escape_x-")
    assert not (tmp_path.parent / "escape").exists() and not (tmp_path / "escape").exists()


def test_a_failed_save_leaves_no_directory(tmp_path, monkeypatch):
    # A full disk in the middle of writing the Parquet files.
    sc = cnsim.Scenario(__import__("tomllib").loads(TINY.format(name="t", duration=2.0, seeds=1)))
    res = cnsim.run(sc, progress=False)
    calls = {"n": 0}
    from cnsim import _core

    real = _core.write_parquet

    def full_disk(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*a, **k)

    monkeypatch.setattr(_core, "write_parquet", full_disk)
    with pytest.raises(cnsim.ScenarioError, match="cannot be written .No space.*nothing was saved"):
        res.save(tmp_path / "out", report=False)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.slow
def test_a_kill_at_any_moment_leaves_complete_results_or_none(tmp_path):
    f = _tiny(tmp_path, duration=200.0, seeds=2)
    outcomes = set()
    for i, delay in enumerate([0.3, 0.8, 1.2, 1.6, 2.0, 2.4, 2.8, 3.5]):
        out = tmp_path / f"r{i}"
        p = subprocess.Popen([sys.executable, "-m", "cnsim", "run", str(f), "--out", str(out), "--jobs", "1"])
        time.sleep(delay)
        p.kill()
        p.wait()
        if out.exists():
            assert _complete(out)
            outcomes.add("complete")
        else:
            outcomes.add("absent")
        # The next run into the same directory cleans the killed run's leftovers.
        r = _cli("run", str(f), "--out", str(out), "--jobs", "1", "--no-report", "--force")
        assert r.returncode == 0, r.stderr
        assert _complete(out)
        assert not [p for p in tmp_path.iterdir() if p.name.startswith((".tmp-", ".old-"))]
    assert "absent" in outcomes


@pytest.mark.slow
def test_two_runs_into_one_directory_never_mix(tmp_path):
    f = _tiny(tmp_path, duration=100.0, seeds=2)
    out = tmp_path / "shared"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cnsim",
                "run",
                str(f),
                "--out",
                str(out),
                "--seed",
                str(s),
                "--no-report",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        for s in (1, 2)
    ]
    codes = [(p.wait(), p.stderr.read()) for p in procs]
    ok = [c for c, _ in codes if c == 0]
    refused = [e for c, e in codes if c == 2]
    assert len(ok) == 1 and len(refused) == 1, codes
    assert "another cnsim run is writing" in refused[0] or "already holds results" in refused[0]
    summary = json.loads((out / "summary.json").read_text())
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs["seed"].to_list() == summary["seeds"] and len(summary["seeds"]) == 1


# ------------------------------------------------------------------ Ctrl-C


def test_ctrl_c_keeps_the_finished_seeds_and_marks_them_incomplete(tmp_path):
    import _thread

    from cnsim.executor import Interrupted, LocalBackend, ProgressBar, Unit, execute

    sc = cnsim.load("baseline", seeds=[0, 1, 2]).replace(duration_ms=20.0)
    units = [Unit(sc.engine_json(), s, sc.duration_ms) for s in sc.seeds]
    with pytest.raises(Interrupted) as info:
        execute(
            units,
            LocalBackend(1),
            ProgressBar(False, "", 0, "seeds", 3),
            lambda u, r: _thread.interrupt_main(),
        )
    done = [u.seed for u, _ in info.value.done]
    assert done and done[0] == 0 and len(done) < 3
    part = cnsim.Results(sc, [r for _, r in info.value.done])
    assert not part.complete
    out = part.save(tmp_path / "partial", report=False)
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False and s["seeds"] == done and s["seeds_requested"] == [0, 1, 2]
    back = cnsim.open_results(out)
    assert not back.complete and back.seeds == done


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["run", "singlehop_hotspot", "--duration", "60000", "--seeds", "2"],
        ["bench", "--workload", "fattree"],
        ["fluid", "baseline", "--scheme", "qcn", "--duration", "60000"],
    ],
)
def test_ctrl_c_stops_within_seconds_with_status_130(tmp_path, command):
    p = subprocess.Popen(
        [sys.executable, "-m", "cnsim", *command, "--out", str(tmp_path / "o")]
        if command[0] != "bench"
        else [sys.executable, "-m", "cnsim", *command],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    time.sleep(3)  # the work has started (imports, validation)
    p.send_signal(signal.SIGINT)
    try:
        code = p.wait(timeout=15)  # the runs would take minutes
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    err = p.stderr.read()
    assert code == 130, err
    assert err.strip().splitlines()[-1].startswith("error: interrupted")


@pytest.mark.slow
def test_a_second_ctrl_c_exits_at_once(tmp_path):
    p = subprocess.Popen(
        [sys.executable, "-m", "cnsim", "bench", "--workload", "fattree"],
        stderr=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    time.sleep(3)
    os.kill(p.pid, signal.SIGINT)
    os.kill(p.pid, signal.SIGINT)
    assert p.wait(timeout=15) == 130


# --------------------------------------------------------------- resources


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["run", "baseline", "--duration", "5000", "--set", "bin_us=0.1"],
            "error: --set bin_us: duration_ms / bin_us: 5000 / 0.1 not allowed",
        ),
        (["run", "baseline", "--seeds", "1000000000"], "error: seeds: 1000000000 is not allowed"),
        (["run", "baseline", "--seeds", "200000"], "error: bin_us: the run would keep about"),
        (
            ["run", "baseline", "--seeds", "200", "--set", "bin_us=1"],
            "error: bin_us: the run would keep about",
        ),
        (["run", "baseline", "--seed", "9223372036854775808"], "error: seeds: [9223372036854775808] is not"),
        (["run", "baseline", "--duration", "inf"], "error: --duration: inf is not allowed"),
        (["bench", "--duration-ms", "nan"], "error: --duration-ms: nan is not allowed"),
        (
            ["run", "baseline", "--set", "defaults.link_rate_gbps=1e308"],
            "error: --set defaults.link_rate_gbps: 1e+308",
        ),
        (
            ["run", "baseline", "--set", "bin_us=1e-7"],
            "error: --set bin_us: 1e-07 is not allowed; expected a number >= 1e-06",
        ),
        (
            ["run", "baseline", "--scheme", "qcn", "--set", "qcn.timer_ms=1e-12"],
            "error: --set qcn.timer_ms: 1e-12 not allowed; expected timer_ms = 0 (no timer)",
        ),
        (
            ["run", "baseline", "--set", "nodes.S1.load=true"],
            "error: --set nodes.S1.load: true is not allowed",
        ),
        (["run", "baseline", "--set", "seeds=true"], "error: --set seeds: true is not allowed"),
        (["run", "baseline", "--set", "pause.enabled=1"], "error: --set pause.enabled: 1 is not allowed"),
        (["run", "baseline", "--set", "bin_us=[abc]"], "error: --set bin_us: '[abc]' is not allowed"),
        (["run", "baseline", "--set", "stability.port='B1->B9'"], "error: --set stability.port: 'B1->B9'"),
        (
            ["run", "baseline", "--set", "innocent.sink='B5'"],
            "error: --set innocent.sink: 'B5' is not allowed",
        ),
        (
            ["run", "baseline", "--set", "trace.rate_limiters=['S1|X']"],
            "error: --set trace.rate_limiters: 'S1|X'",
        ),
        (
            ["run", "fattree_hotspot", "--set", "topology.n=4", "--set", "topology.k=64"],
            "error: --set topology.k / topology.n:",
        ),
        (
            ["run", "innocent", "--set", "topology.degree=100000"],
            "error: --set topology.degree: 100000 is not allowed",
        ),
        (["validate", "--jobs", "0"], "error: --jobs: 0 is not allowed"),
        (["run"], "error: Missing argument 'scenario'."),
    ],
)
def test_every_reproducer_gives_exit_2_and_one_line(args, line):
    r = _cli(*args, timeout=120)  # a hang guard, not a speed bound
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith(line), r.stderr
    assert r.stderr.count("\n") == 1, r.stderr


def test_a_grid_of_a_million_points_is_refused_at_once(tmp_path):
    many = ",".join(str(i) for i in range(1, 1001))
    r = _cli(
        "sweep",
        "baseline",
        "--grid",
        f"bcn.w={many}",
        "--grid",
        f"bcn.gi={many}",
        "--out",
        str(tmp_path / "s"),
    )
    assert r.returncode == 2 and r.stderr.startswith("error: --grid: 1,000,000 points is not allowed")
    assert not (tmp_path / "s").exists()


def test_a_memory_cap_names_what_to_change(monkeypatch):
    monkeypatch.setenv("CNSIM_MEMORY_CAP", "1M")
    with pytest.raises(
        cnsim.ScenarioError,
        match=r"^bin_us: the run would keep about .* above the memory cap of 1.0 MB \(CNSIM_MEMORY_CAP\)",
    ):
        cnsim.run(cnsim.load("baseline"), progress=False)


# --------------------------------------------------------------- messages


def test_deeply_nested_toml_is_malformed_toml(tmp_path):
    f = tmp_path / "deep.toml"
    f.write_text("x = " + "[" * 100_000)
    r = _cli("run", str(f))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {f}: malformed TOML")


def test_brackets_in_messages_are_printed_as_written(tmp_path):
    f = _tiny(tmp_path)
    f.write_text(f.read_text() + "\n[windows.measure]\nstart_ms = 0\nend_ms = 1\n")
    r = _cli("run", str(f))
    assert r.returncode == 2 and "use [measure]" in r.stderr


def test_a_newline_in_a_value_stays_on_one_line():
    with pytest.raises(cnsim.ScenarioError) as e:
        cnsim.load("baseline").replace(**{"utilization.link": "a\nb"})
    assert "\n" not in str(e.value) and "a\\nb" in str(e.value)


def test_help_lists_every_scheme():
    r = _cli("run", "--help")
    for name in cnsim.schemes.SCHEMES:
        assert name in r.stdout


def test_fat_tree_switch_names_never_collide():
    from cnsim.topologies import fattree

    for k, n in ((12, 3), (16, 3), (11, 2), (3, 5)):
        nodes, links = fattree(k, n)
        names = [nd["name"] for nd in nodes]
        assert len(names) == len(set(names)), (k, n)
        assert len(links) == k**n + (n - 1) * k ** (n - 1) * k


# --------------------------------------------------------------- damaged results


def test_report_names_a_damaged_run_file(tmp_path):
    f = _tiny(tmp_path)
    out = tmp_path / "r"
    assert _cli("run", str(f), "--out", str(out), "--no-report").returncode == 0
    (out / "timeseries.parquet").write_text("garbage")
    r = _cli("report", str(out))
    assert (
        r.returncode == 2 and "timeseries.parquet: cannot be read" in r.stderr and r.stderr.count("\n") == 1
    )


@pytest.mark.slow
def test_report_and_resume_skip_or_redo_a_damaged_sweep_point(tmp_path):
    out = tmp_path / "s"
    args = [
        "sweep",
        "baseline",
        "--grid",
        "bcn.w=1,2",
        "--seeds",
        "1",
        "--duration",
        "10",
        "--out",
        str(out),
        "--no-report",
    ]
    assert _cli(*args).returncode == 0
    point = sorted(p for p in out.iterdir() if p.name.startswith("p000"))[0]
    (point / "summary.json").write_text("[1, 2")
    r = _cli("report", str(out))
    assert r.returncode == 0 and "summary.json is missing or damaged" in r.stderr and point.name in r.stderr
    r = _cli(*args)
    assert r.returncode == 0 and "1 run, 1 already finished" in r.stdout
    assert json.loads((point / "summary.json").read_text())["seeds"] == [0]
