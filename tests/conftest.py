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
