"""What run wrote a file of a results directory: the keys every file
carries (a Parquet footer's key-value metadata, a capture's section header
comment) and the hash they hold. Below both cnsim.results, which writes and
checks them, and cnsim.trace, whose files carry them too."""

from __future__ import annotations

from typing import Any

#: The SHA-256 of the scenario.toml the run was saved with.
RUN_SHA256 = "cnsim.scenario_sha256"
#: The run's seeds, a JSON list.
RUN_SEEDS = "cnsim.seeds"


def sha256(text: str | bytes) -> str:
    """The SHA-256 (hex) of a scenario.toml's text."""
    import hashlib  # OpenSSL's library, a few ms to load: `cnsim run` loads it while the engine runs

    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def mismatch(path: object, got: dict[str, str | None], ident: dict[str, str]) -> str | None:
    """Why a file whose footer holds `got` is not of the run `ident` (one
    line naming `path`), or None when it is."""
    if got == ident:
        return None
    if all(v is None for v in got.values()):
        return (
            f"{path}: carries no run identity (scenario SHA-256 and seeds), so it is not from "
            "the run of this directory's summary.json; the results directory is mixed"
        )
    return (
        f"{path}: from another run (scenario SHA-256 {str(got.get(RUN_SHA256))[:12]}..., seeds "
        f"{got.get(RUN_SEEDS)}), not this directory's ({ident[RUN_SHA256][:12]}..., seeds "
        f"{ident[RUN_SEEDS]}); the results directory is mixed"
    )


def crc32(path: Any) -> int:
    """The CRC-32 of a file's bytes (zlib's), read 1 MB at a time."""
    import zlib

    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc
