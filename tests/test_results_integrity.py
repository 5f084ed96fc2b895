"""Issue 28, the rest: raw OS errors (item 8), damaged results (item 9),
mixed results directories (item 10), byte-identical Parquet files (item
15), and the bars (every refusal prompt, SIGINT on any run within 2 s).
Each test reproduces one of the issue's defects."""

from __future__ import annotations

import errno
import json
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cnsim
import pytest
from cnsim import _core
from cnsim.errors import ScenarioError
from test_hostile_input import FSMALL, cli, refused


def _fsmall(tmp_path: Path) -> Path:
    f = tmp_path / "fsmall.toml"
    f.write_text(FSMALL)
    return f


def _fsize(limit_bytes: int) -> Any:
    """A preexec_fn: the child can write files of at most `limit_bytes`."""

    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return set_limit


def _left(where: Path, *keep: str) -> list[str]:
    return sorted(p.name for p in where.iterdir() if p.name not in keep)


# ---------------------------------------------------------------- item 8


def test_a_file_size_limit_names_out_and_the_file_and_saves_nothing(tmp_path):
    f = _fsmall(tmp_path)
    out = tmp_path / "o"
    p = subprocess.run(
        [sys.executable, "-m", "cnsim", "run", str(f), "--seeds", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_fsize(10 * 1024),
    )
    refused(p, f"error: --out {out}: cannot be written (scenario.toml: File too large")
    assert "ulimit -f" in p.stderr and "nothing was saved" in p.stderr
    assert _left(tmp_path, "fsmall.toml") == []


def test_the_engine_writer_raises_os_errors_with_errno_and_file(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        _core.write_parquet(str(tmp_path / "none" / "x.parquet"), [[("a", "i64", [1])]])
    assert e.value.errno == errno.ENOENT and e.value.filename == str(tmp_path / "none" / "x.parquet")
    # A file size limit met inside the Parquet writer (a child: the limit is per process).
    code = (
        "import resource, errno\n"
        "from cnsim import _core\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "values = bytes(range(256)) * 4096\n"
        "try:\n"
        f"    _core.write_timeseries({str(tmp_path / 'ts.parquet')!r}, [(0, 1000, [('s', 'k', 0, len(values) // 8)], values)])\n"
        "except OSError as e:\n"
        "    print(e.errno == errno.EFBIG, e.filename)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["True", str(tmp_path / "ts.parquet")], p.stderr


def test_a_full_disk_in_the_engine_writer_names_out_and_the_file(tmp_path, monkeypatch):
    sc = cnsim.load(_fsmall(tmp_path), seeds=[0])
    res = cnsim.run(sc, progress=False)
    real = _core.write_timeseries

    def full_disk(path: str, *a: Any, **k: Any) -> None:
        real(path, *a, **k)
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(_core, "write_timeseries", full_disk)
    with pytest.raises(ScenarioError) as e:
        res.save(tmp_path / "out", report=False)
    msg = str(e.value)
    assert msg.startswith(f"out {tmp_path / 'out'}: cannot be written (timeseries.parquet: No space left")
    assert msg.endswith("nothing was saved")
    assert _left(tmp_path, "fsmall.toml") == []


def test_a_300_character_out_is_refused_naming_out(tmp_path):
    f = _fsmall(tmp_path)
    for out in ("x" * 300, "new/" + "x" * 300):
        p = cli("run", str(f), "--seeds", "1", "--out", out, cwd=tmp_path)
        refused(p, f"error: --out {out}: cannot be written (File name too long); nothing was saved")
        assert _left(tmp_path, "fsmall.toml") == []  # not even the parent it made


def test_a_300_character_cdf_or_scenario_name_is_named(tmp_path):
    f = _fsmall(tmp_path)
    name = "c" * 300 + ".cdf"
    p = cli("run", str(f), "--set", f"workload.cdf={name}", cwd=tmp_path)
    refused(p, f"error: --set workload.cdf: '{name}' cannot be read (File name too long)")
    p = cli("run", "s" * 300 + ".toml", cwd=tmp_path)
    refused(p, f"error: scenario file '{'s' * 300}.toml' cannot be read (File name too long)")


# ----------------------------------------------------- items 9, 10 and 15


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two saves of fsmall (seeds 0 and 1) from separate runs (jobs 1 and
    2), and a run of another scenario (load 0.3) with the same seeds."""
    d = tmp_path_factory.mktemp("saved")
    f = _fsmall(d)
    sc = cnsim.load(f, seeds=[0, 1])
    cnsim.run(sc, jobs=1, progress=False).save(d / "a", report=False)
    cnsim.run(sc, jobs=2, progress=False).save(d / "a2", report=False)
    cnsim.run(sc.replace(**{"workload.load": 0.3}), progress=False).save(d / "b", report=False)
    return {"a": d / "a", "a2": d / "a2", "b": d / "b"}


def _wall_free(summary: dict[str, Any]) -> dict[str, Any]:
    from cnsim.results import WALL_CLOCK_FIELDS

    # summary.json's own CRC-32 (crc32) covers the wall-clock figures too.
    body = {k: v for k, v in summary.items() if k != "crc32"}
    return {**body, "engine": {k: v for k, v in summary["engine"].items() if k not in WALL_CLOCK_FIELDS}}


def test_two_runs_of_one_scenario_and_seeds_give_byte_identical_parquet(saved):
    a, a2 = saved["a"], saved["a2"]
    files = sorted(p.name for p in a.iterdir())
    assert files == sorted(p.name for p in a2.iterdir())
    parquet = [n for n in files if n.endswith(".parquet")]
    assert len(parquet) >= 7
    for name in [*parquet, "scenario.toml"]:
        assert (a / name).read_bytes() == (a2 / name).read_bytes(), name
    import polars as pl

    assert not [c for c in pl.read_parquet(a / "runs.parquet").columns if "wall" in c]
    # Only the wall-clock figures differ: summary.json's engine rates, and timing.json.
    sa, sa2 = (json.loads((d / "summary.json").read_text()) for d in (a, a2))
    assert _wall_free(sa) == _wall_free(sa2)
    timing = json.loads((a / "timing.json").read_text())
    assert timing["seeds"] == [0, 1] and len(timing["wall_s"]) == 2 and all(w > 0 for w in timing["wall_s"])
    # Reopened, the wall times come back from timing.json: the same summary.
    assert cnsim.open_results(a).summary_dict() == {k: v for k, v in sa.items() if k != "crc32"}


def test_every_file_carries_the_run_it_belongs_to(saved):
    import polars as pl

    s = json.loads((saved["a"] / "summary.json").read_text())
    for p in saved["a"].glob("*.parquet"):
        kv = pl.read_parquet_metadata(p)
        assert kv["cnsim.scenario_sha256"] == s["scenario_sha256"], p.name
        assert json.loads(kv["cnsim.seeds"]) == s["seeds"] == [0, 1], p.name
    other = json.loads((saved["b"] / "summary.json").read_text())
    assert other["scenario_sha256"] != s["scenario_sha256"]


@pytest.mark.parametrize(
    "name",
    [
        "scenario.toml",
        "flows.parquet",
        "pairs.parquet",
        "runs.parquet",
        "timeseries.parquet",
        "links.parquet",
        "queues.parquet",
        "timing.json",
    ],
)
def test_a_file_of_another_run_is_refused_naming_it(saved, tmp_path, name):
    mixed = tmp_path / "mixed"
    shutil.copytree(saved["a"], mixed)
    shutil.copy(saved["b"] / name, mixed / name)
    with pytest.raises(ScenarioError) as e:
        cnsim.open_results(mixed)
    assert str(e.value).startswith(str(mixed / name)), str(e.value)
    assert "mixed" in str(e.value)


def test_a_file_of_other_seeds_or_without_identity_is_refused(saved, tmp_path):
    import polars as pl

    sc = cnsim.load(saved["a"] / "scenario.toml", seeds=[0])
    cnsim.run(sc, progress=False).save(tmp_path / "one", report=False)
    mixed = tmp_path / "mixed"
    shutil.copytree(saved["a"], mixed)
    shutil.copy(tmp_path / "one" / "nodes.parquet", mixed / "nodes.parquet")
    with pytest.raises(ScenarioError, match=r"nodes\.parquet: from another run .*seeds \[0\]\)"):
        cnsim.open_results(mixed)
    # Rewritten by another program (polars): the same rows, no identity.
    shutil.copy(saved["a"] / "nodes.parquet", mixed / "nodes.parquet")
    pl.read_parquet(mixed / "windows.parquet").write_parquet(mixed / "windows.parquet")
    with pytest.raises(ScenarioError, match=r"windows\.parquet: carries no run identity"):
        cnsim.open_results(mixed)


def test_the_cli_report_refuses_a_mixed_directory_naming_the_file(saved, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(saved["a"], mixed)
    shutil.copy(saved["b"] / "flows.parquet", mixed / "flows.parquet")
    refused(cli("report", str(mixed)), f"error: {mixed / 'flows.parquet'}: from another run")


def _damage(d: Path, how: str) -> str:
    """Damages results directory `d` as the issue did; returns the file named."""
    if how == "summary is a list":
        (d / "summary.json").write_text("[1, 2]")
        return "summary.json"
    if how == "summary seeds not a list":
        s = json.loads((d / "summary.json").read_text())
        (d / "summary.json").write_text(json.dumps({**s, "seeds": 5}))
        return "summary.json"
    if how == "pairs missing":
        (d / "pairs.parquet").unlink()
        return "pairs.parquet"
    if how == "truncated flows":
        data = (d / "flows.parquet").read_bytes()
        (d / "flows.parquet").write_bytes(data[: len(data) // 2])
        return "flows.parquet"
    if how == "truncated timeseries":
        data = (d / "timeseries.parquet").read_bytes()
        (d / "timeseries.parquet").write_bytes(data[:-10])
        return "timeseries.parquet"
    if how == "timing not a table":
        (d / "timing.json").write_text('"x"')
        return "timing.json"
    raise AssertionError(how)


DAMAGES = [
    "summary is a list",
    "summary seeds not a list",
    "pairs missing",
    "truncated flows",
    "truncated timeseries",
    "timing not a table",
]


@pytest.mark.parametrize("how", DAMAGES)
def test_damaged_results_are_refused_naming_the_file(saved, tmp_path, how):
    d = tmp_path / "d"
    shutil.copytree(saved["a"], d)
    name = _damage(d, how)
    with pytest.raises(ScenarioError) as e:
        cnsim.open_results(d)
    assert name in str(e.value) and str(d) in str(e.value), str(e.value)


@pytest.mark.parametrize("how", ["summary is a list", "pairs missing", "truncated flows"])
def test_cnsim_report_refuses_damaged_results_naming_the_file(saved, tmp_path, how):
    d = tmp_path / "d"
    shutil.copytree(saved["a"], d)
    name = _damage(d, how)
    p = cli("report", str(d))
    refused(p, "error: ")
    assert name in p.stderr


@pytest.mark.parametrize(
    "meta, what",
    [
        ({"points": 5}, "'points' is not a list"),
        ({"points": [5]}, "points[0] is not"),
        ({"points": [{"id": "../x", "values": {}}]}, "points[0] is not"),
        ({"grid": [1]}, "'grid' is not a table"),
        ({"seeds": "0"}, "'seeds' is not a list"),
    ],
)
def test_a_damaged_sweep_json_is_refused_naming_it(tmp_path, meta, what):
    d = tmp_path / "sw"
    d.mkdir()
    (d / "sweep.json").write_text(
        json.dumps({"cnsim_sweep": 1, "grid": {}, "seeds": [0], "points": [], **meta})
    )
    with pytest.raises(ScenarioError) as e:
        cnsim.open_results(d)
    assert str(e.value).startswith(f"{d / 'sweep.json'}: damaged sweep description: {what}"), str(e.value)
    refused(cli("report", str(d)), f"error: {d / 'sweep.json'}: damaged sweep description: {what}")


# ------------------------------------------------------------------ bars

#: fsmall with flows for a whole simulated second: minutes of engine time.
LONG_FLOWS = FSMALL.replace("end_ms = 1.0", "end_ms = 1000.0").replace(
    "duration_ms = 5.0", "duration_ms = 1000.0"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["run", "{f}", "--seeds", "2", "--out", "{d}/o"],
        ["sweep", "{f}", "--grid", "workload.load=0.3,0.5", "--seeds", "2", "--out", "{d}/sw"],
    ],
    ids=["flow run", "flow sweep"],
)
def test_sigint_stops_a_long_flow_run_or_sweep_with_status_130(tmp_path, command):
    f = tmp_path / "long.toml"
    f.write_text(LONG_FLOWS)
    args = [a.format(f=f, d=tmp_path) for a in command]
    p = subprocess.Popen(
        [sys.executable, "-m", "cnsim", *args], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    time.sleep(4)  # the runs have started (imports, validation)
    assert p.poll() is None, p.stderr.read() if p.stderr else ""
    p.send_signal(signal.SIGINT)
    try:
        code = p.wait(timeout=30)  # a hang guard: the runs would take minutes
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    err = p.stderr.read() if p.stderr else ""
    assert code == 130, err
    assert err.strip().splitlines()[-1].startswith("error: interrupted"), err
    assert not [q for q in tmp_path.iterdir() if q.name.startswith((".tmp-", ".old-"))]


@pytest.mark.parametrize(
    "args, start",
    [
        (["run", "flows_incast", "--set", "workload.period_us=0.001"], "error: --set workload.period_us"),
        (["run", "flows_incast", "--scheme", "timely", "--set", "timely.min_rate_mbps=10001"], "error: "),
        (["run", "flows_incast", "--set", 'workload.hosts=["H0","H0"]'], "error: "),
        (["run", "flows_incast", "--scheme", "pause", "--no-pause"], "error: "),
        (["run", "flows_incast", "--out", "x" * 300], "error: --out"),
        (["report", "."], "error: report:"),
    ],
)
def test_reproducers_refuse_in_one_line(tmp_path, args, start):
    p = cli(*args, cwd=tmp_path)
    refused(p, start)
    assert _left(tmp_path) == []


# ----------------------------------------- item 10: the event trace and captures


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """fsmall with an event trace and a capture: seeds 0 and 1 twice (jobs
    1 and 2), seed 0 alone, and another scenario (load 0.3) with seeds 0, 1."""
    d = tmp_path_factory.mktemp("traced")
    sc = cnsim.load(_fsmall(d), seeds=[0, 1]).replace(
        **{"trace.events": ["enqueue", "drop", "pause_tx"], "trace.pcap": ["L0->H0"], "duration_ms": 2}
    )
    cnsim.run(sc, jobs=1, progress=False).save(d / "a", report=False)
    cnsim.run(sc, jobs=2, progress=False).save(d / "a2", report=False)
    cnsim.run(sc.replace(seeds=[0]), progress=False).save(d / "one", report=False)
    cnsim.run(sc.replace(**{"workload.load": 0.3}), progress=False).save(d / "b", report=False)
    return {k: d / k for k in ("a", "a2", "one", "b")}


def _shb_comment(path: Path) -> str:
    """The comment option of a pcapng file's section header block (read here
    with struct, independently of cnsim.trace)."""
    data = path.read_bytes()
    kind, length, magic = struct.unpack_from("<III", data, 0)
    assert kind == 0x0A0D0D0A and magic == 0x1A2B3C4D
    i = 24
    while i < length - 4:
        code, n = struct.unpack_from("<HH", data, i)
        if code == 1:
            return data[i + 4 : i + 4 + n].decode()
        if code == 0:
            break
        i += 4 + (n + 3) // 4 * 4
    return ""


def test_the_event_trace_and_every_capture_carry_their_run(traced):
    import polars as pl

    for name in ("a", "one"):  # two seeds merged, and one seed's file kept as the engine wrote it
        s = json.loads((traced[name] / "summary.json").read_text())
        kv = pl.read_parquet_metadata(traced[name] / "events.parquet")
        assert kv["cnsim.scenario_sha256"] == s["scenario_sha256"]
        assert json.loads(kv["cnsim.seeds"]) == s["seeds"]
        caps = sorted((traced[name] / "pcap").glob("*.pcapng"))
        assert len(caps) == len(s["seeds"])
        for seed, cap in zip(s["seeds"], caps, strict=True):
            c = _shb_comment(cap)
            assert f"cnsim.scenario_sha256={s['scenario_sha256']}" in c and c.endswith(
                f"cnsim.seed={seed}"
            ), c
        assert len(cnsim.open_results(traced[name]).events()) > 0
    # Same scenario and seeds: the same bytes, whatever the number of jobs.
    assert (traced["a"] / "events.parquet").read_bytes() == (traced["a2"] / "events.parquet").read_bytes()
    for cap in (traced["a"] / "pcap").iterdir():
        assert cap.read_bytes() == (traced["a2"] / "pcap" / cap.name).read_bytes()


@pytest.mark.parametrize(
    ("source", "name", "message"),
    [
        ("b", "events.parquet", "from another run"),
        ("one", "events.parquet", r"from another run .*seeds \[0\]\)"),
        ("b", "pcap/L0-to-H0.seed1.pcapng", "not captured by this directory's run"),
    ],
)
def test_a_trace_file_of_another_run_is_refused_naming_it(traced, tmp_path, source, name, message):
    mixed = tmp_path / "mixed"
    shutil.copytree(traced["a"], mixed)
    shutil.copy(traced[source] / name, mixed / name)
    with pytest.raises(ScenarioError, match=message) as e:
        cnsim.open_results(mixed)
    assert str(e.value).startswith(str(mixed / name)) and "mixed" in str(e.value), str(e.value)
    refused(cli("report", str(mixed)), f"error: {mixed / name}: ")


def test_an_event_trace_rewritten_without_its_run_is_refused(traced, tmp_path):
    import polars as pl

    mixed = tmp_path / "mixed"
    shutil.copytree(traced["a"], mixed)
    pl.read_parquet(mixed / "events.parquet").write_parquet(mixed / "events.parquet")
    with pytest.raises(ScenarioError, match=r"events\.parquet: carries no run identity"):
        cnsim.open_results(mixed)
