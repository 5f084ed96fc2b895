import subprocess
import sys
from pathlib import Path

import pytest


def cnsim_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the CLI as a user would (a separate process)."""
    return subprocess.run(
        [sys.executable, "-m", "cnsim", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


@pytest.fixture
def cli():
    return cnsim_cli


def refused_lines(tmp_path: Path, f: Path, *args: str) -> list[str]:
    """`cnsim run F ARGS` (no report, into TMP_PATH/o) exits 2: its error lines."""
    p = cnsim_cli("run", str(f), *args, "--no-report", "--out", str(tmp_path / "o"))
    assert p.returncode == 2, p.stderr
    return [ln for ln in p.stderr.splitlines() if ln.startswith("error")]


@pytest.fixture
def refused():
    return refused_lines
