"""What run wrote a file of a results directory: the keys every file
carries (a Parquet footer's key-value metadata, a capture's section header
comment) and the hash they hold. Below both cnsim.results, which writes and
checks them, and cnsim.trace, whose files carry them too."""

from __future__ import annotations

import hashlib

#: The SHA-256 of the scenario.toml the run was saved with.
RUN_SHA256 = "cnsim.scenario_sha256"
#: The run's seeds, a JSON list.
RUN_SEEDS = "cnsim.seeds"


def sha256(text: str | bytes) -> str:
    """The SHA-256 (hex) of a scenario.toml's text."""
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()
