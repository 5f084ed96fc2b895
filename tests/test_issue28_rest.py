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
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cnsim
import pytest
from cnsim import _core
from cnsim.errors import ScenarioError

from test_issue28 import FSMALL, cli, refused


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
