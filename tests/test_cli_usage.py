"""The `cnsim` command line as a user runs it (a separate process): bad input
exits with status 2 and one `error: ...` line naming the parameter, never a
traceback; good runs are reproducible to the byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BAD_INPUTS = [
    (
        ["run", "nosuch"],
        "error: unknown scenario 'nosuch'; built-in scenarios: allreduce_ring, alltoall_fattree, baseline",
    ),
    (["run", "baseline", "--set", "nosuch.key=1"], "error: --set nosuch.key: unknown parameter 'nosuch'"),
    (
        ["run", "baseline", "--set", "pause.nosuch=1"],
        "error: --set pause.nosuch: unknown parameter; known: enabled",
    ),
    (
        ["run", "baseline", "--set", "station.nic_buffer_bytes=-1"],
        "error: --set station.nic_buffer_bytes: -1 is not allowed; expected an integer >= 1",
    ),
    (
        ["run", "baseline", "--set", "pause.xoff_bytes=-5"],
        "error: --set pause.xoff_bytes: -5 is not allowed; expected an integer >= 0",
    ),
    (
        ["run", "baseline", "--set", "defaults.link_rate_gbps=-10"],
        "error: --set defaults.link_rate_gbps: -10 is not allowed; expected a number >= 1e-09",
    ),
    (
        ["run", "singlehop_hotspot", "--set", "hotspot.rate_gbps=-1"],
        "error: --set hotspot.rate_gbps: -1 is not allowed; expected a number >= 0",
    ),
    # A parameter of a scheme that does not run would be ignored: refused.
    (
        ["run", "flows_incast", "--set", "hpcc.eta=0.5"],
        "error: --set hpcc.eta: a parameter of hpcc, but the scheme that runs is dcqcn, so it would be "
        "ignored; choose that scheme too (--scheme hpcc, or sweep it: --grid scheme=dcqcn,hpcc)",
    ),
    (
        ["run", "baseline", "--scheme", "nocm", "--set", "bcn.w=4"],
        "error: --set bcn.w: a parameter of bcn, bcn00, bcnmax, but the scheme that runs is nocm",
    ),
    (
        ["sweep", "baseline", "--grid", "hpcc.eta=0.5,0.9"],
        "error: --grid hpcc.eta: a parameter of hpcc, but the scheme that runs is bcn",
    ),
    (
        ["sweep", "baseline", "--grid", "scheme=bcn,qcn", "--set", "hpcc.eta=0.5"],
        "error: --set hpcc.eta: a parameter of hpcc, but the scheme that runs is bcn / qcn",
    ),
    (
        ["run", "baseline", "--set", "hotspot.rate_gbps=0.5"],
        "error: --set hotspot.rate_gbps: hotspot.node: required parameter is missing",
    ),
    (["run", "baseline", "--set", "nodes.S1.load=2"], "error: --set nodes.S1.load: 2 is not allowed"),
    (
        ["run", "baseline", "--set", "pause.xon_bytes=150000"],
        "error: --set pause.xon_bytes / pause.xoff_bytes: 150000 / 140000 not allowed",
    ),
    (  # an engine rule that reads the key set: both named, after the --set key
        ["run", "baseline", "--set", "pause.xoff_bytes=100000"],
        "error: --set pause.xoff_bytes: pause.xon_bytes / pause.xoff_bytes: 130000 / 100000 not allowed",
    ),
    (  # a sweep whose --set breaks a rule by itself: the --set is named, not the grid key
        ["sweep", "baseline", "--set", "pause.xoff_bytes=1000", "--grid", "pause.enabled=true,false"],
        "error: --set pause.xoff_bytes: pause.xon_bytes / pause.xoff_bytes: 130000 / 1000 not allowed",
    ),
    (  # ... and the grid key when the rule it breaks names it
        ["sweep", "baseline", "--set", "pause.xon_bytes=150000", "--grid", "pause.xoff_bytes=140000,200000"],
        "error: --grid pause.xoff_bytes: pause.xon_bytes / pause.xoff_bytes: 150000 / 140000 not allowed",
    ),
    (["run", "baseline", "--set", "duration_ms"], "error: --set duration_ms: expected KEY=VALUE"),
    (["run", "baseline", "--scheme", "nosuch"], "error: scheme: 'nosuch' is not a known scheme; known: nocm"),
    (["run", "baseline", "--seed", "-1"], "error: --seed: -1 is not allowed"),
    (["run", "baseline", "--seeds", "2", "--seed", "1"], "error: --seeds and --seed: give one of them"),
    (["show", "nosuch"], "error: unknown scenario 'nosuch'"),
    (["bench", "--duration-ms", "0"], "error: --duration-ms: 0.0 is not allowed"),
    (["bench", "--repeat", "101"], "error: --repeat: 101 is not allowed"),
    (["bench", "--whole"], "error: --whole: give one or more scenario files"),
    (["bench", "baseline"], "error: baseline: scenario files are timed with --whole"),
    (["bench", "--whole", "nosuch.toml"], "error: nosuch.toml: no such scenario file or built-in scenario"),
    (["bench", "--whole", "baseline", "--hosts", "64"], "error: --hosts: not with --whole"),
    (["bench", "--whole", "baseline", "--repeat", "0"], "error: --repeat: 0 is not allowed"),
]


@pytest.mark.parametrize(("args", "line"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_exits_2_with_one_line(cli, args, line):
    r = cli(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = r.stderr.strip()
    assert err.startswith(line), err
    assert "\n" not in err, err
    assert "Traceback" not in r.stderr + r.stdout


def test_malformed_and_invalid_toml_files_exit_2(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nduration_ms = 100.0\n[[nodes]\n')
    r = cli("run", str(bad))
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {bad}: malformed TOML: ") and r.stderr.count("\n") == 1
    invalid = tmp_path / "invalid.toml"
    invalid.write_text(
        'duration_ms = 10.0\n[[nodes]]\nname = "S"\nkind = "station"\nload = 0.5\ndest = "D"\n'
        '[[nodes]]\nname = "D"\nkind = "station"\n[[links]]\na = "S"\nb = "X"\n'
    )
    r = cli("run", str(invalid), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert r.stderr.strip().startswith("error: links.S-X: unknown node 'X'")
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()  # nothing written for a bad scenario


def test_typer_usage_errors_keep_exit_2(cli):
    r = cli("run", "baseline", "--seeds", "many")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = cli("frobnicate")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_console_script_exits_2_too():
    script = Path(sys.executable).parent / "cnsim"
    if not script.exists():
        pytest.skip("the cnsim console script is not installed next to this Python")
    r = subprocess.run([str(script), "run", "nosuch"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("error: unknown scenario 'nosuch'")


def test_run_json_prints_one_object_and_writes_results(cli, tmp_path):
    out = tmp_path / "r"
    r = cli(
        "run", "baseline", "--scheme", "pause", "--seeds", "2", "--duration", "12",
        "--set", "pause.xoff_bytes=120000", "--set", "pause.xon_bytes=110000",
        "--out", str(out), "--json", "--no-report",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)  # exactly one JSON document on stdout
    assert s["scheme"] == "nocm" and s["pause"] is True and s["seeds"] == [0, 1]
    assert s["out"] == str(out)
    assert (out / "summary.json").is_file() and not (out / "report.html").exists()
    shown = (out / "scenario.toml").read_text()
    assert "xoff_bytes = 120000" in shown and "duration_ms = 12.0" in shown


def _run(cli, out: Path, *extra: str) -> Path:
    r = cli(
        "run", "baseline", "--scheme", "nocm", "--pause", "--seeds", "2", "--duration", "25",
        "--out", str(out), "--no-report", *extra,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return out


def _without_wall_clock(summary: dict) -> dict:
    for k in ("wall_s", "events_per_s", "frames_delivered_per_s", "sim_speed"):
        summary["engine"].pop(k, None)
    summary.pop("crc32", None)  # summary.json's own CRC-32 covers the wall-clock figures too
    return summary


@pytest.mark.slow
def test_same_seeds_give_identical_files_whatever_the_number_of_jobs(cli, tmp_path):
    a = _run(cli, tmp_path / "a", "--jobs", "1")
    b = _run(cli, tmp_path / "b", "--jobs", "2")
    for name in ("timeseries.parquet", "flows.parquet", "links.parquet", "scenario.toml"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    sa, sb = (_without_wall_clock(json.loads((d / "summary.json").read_text())) for d in (a, b))
    assert sa == sb
    assert sa["metrics"]["pause_frames"]["min"] > 0  # PAUSE really was on


def test_a_parameter_of_a_scheme_that_does_not_run_is_refused_in_python_too(tmp_path):
    import cnsim

    sc = cnsim.load("flows_incast")
    with pytest.raises(
        cnsim.ScenarioError, match=r"^hpcc\.eta: a parameter of hpcc, but the scheme that runs is dcqcn"
    ):
        sc.replace(**{"hpcc.eta": 0.5})
    with pytest.raises(cnsim.ScenarioError, match=r"^hpcc: a parameter of hpcc"):
        sc.replace(hpcc={"eta": 0.5})
    # With the scheme chosen in the same call (or earlier) it is the running scheme's.
    assert sc.replace(scheme="hpcc", **{"hpcc.eta": 0.5}).table.eta == 0.5
    assert sc.replace(scheme="hpcc").replace(**{"hpcc.eta": 0.7}).table.eta == 0.7
    # A sweep refuses an axis that no point reads, before anything is written ...
    with pytest.raises(cnsim.ScenarioError, match=r"^grid hpcc\.eta: a parameter of hpcc"):
        cnsim.sweep(sc, grid={"hpcc.eta": [0.5, 0.9]}, out=tmp_path / "a")
    assert not (tmp_path / "a").exists()
    # ... and takes it when the same grid sweeps the scheme: hpcc's points read it.
    from cnsim.sweeps import build_points

    points = build_points(sc, {"scheme": ["dcqcn", "hpcc"], "hpcc.eta": [0.5, 0.9]})
    assert [(p.scenario.scheme, p.scenario.model.hpcc.eta) for p in points] == [
        ("dcqcn", 0.5),
        ("dcqcn", 0.9),
        ("hpcc", 0.5),
        ("hpcc", 0.9),
    ]


def test_bench_whole_times_separate_cnsim_run_processes(cli, tmp_path):
    """`cnsim bench --whole` runs `cnsim run FILE --seed 0` in processes of its
    own: its figures are the child's (frames as the run reports them, the
    engine's share of the whole process below 1, the child's own memory)."""
    small = "flows_incast"  # a built-in name; ends with its last flow
    r = cli("bench", "--whole", small, "--repeat", "2", "--json")
    assert r.returncode == 0, r.stderr
    fig = json.loads(r.stdout)
    assert fig["runs"] == 2 and len(fig["files"]) == 1
    f = fig["files"][0]
    ran = json.loads(
        cli("run", small, "--seed", "0", "--no-report", "--json", "--out", str(tmp_path / "o")).stdout
    )
    assert f["frames_delivered"] == ran["frames"]["delivered"] > 0
    assert 0 < f["engine_best_s"] < f["wall_best_s"] <= f["wall_median_s"]
    assert 0 < f["engine_share"] < 1
    assert 0 < f["user_best_s"] <= f["user_median_s"]
    assert 20 < f["peak_rss_mb"] < 2000  # a Python process, measured per child
    assert f["frames_per_s_whole"] == pytest.approx(f["frames_delivered"] / f["wall_best_s"])


def _finish_in_child(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "child.py"
    script.write_text(code)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)


def test_a_finished_command_exits_with_its_code_and_everything_it_printed(tmp_path):
    # signals.finish skips the interpreter's teardown: the exit handlers run,
    # what was printed (even without a newline) is flushed, and the code is
    # the command's.
    r = _finish_in_child(
        "import atexit, sys\nfrom cnsim.signals import finish\nprint('out', end='')\n"
        "atexit.register(lambda: print(' handler', end='', file=sys.stderr))\n"
        "print('err', end='', file=sys.stderr)\nfinish(3)\n",
        tmp_path,
    )
    assert (r.returncode, r.stdout, r.stderr) == (3, "out", "err handler")


def test_a_finished_command_still_waits_for_a_thread_at_work(tmp_path):
    # A thread that is not a daemon (a writer still at work) makes finish a
    # normal exit, which waits for it: its file is there, whole.
    done = tmp_path / "done.txt"
    r = _finish_in_child(
        "import threading, time\nfrom cnsim.signals import finish\n"
        f"def work():\n    time.sleep(0.3)\n    open({str(done)!r}, 'w').write('whole')\n"
        "threading.Thread(target=work).start()\nfinish(0)\n",
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert done.read_text() == "whole"
