"""Collective jobs (`[[jobs]]`, docs/collectives.md) on the Python side:
the engine plans and runs them (crates/cnsim-core/src/collective) and
reports per collective and per iteration (collectives.parquet,
iterations.parquet); here, what a scenario's jobs would say before the run
(`job_warnings`)."""

from __future__ import annotations

from typing import Any


def job_warnings(scenario: Any) -> list[str]:
    """Legal but almost certainly unintended job settings, one line each: a
    chunk larger than its collective's message (nothing is pipelined)."""
    out = []
    for j, job in enumerate(scenario.model.jobs or []):
        for p, ph in enumerate(job.phases):
            chunk, size = ph.get("chunk_bytes"), ph.get("size_bytes")
            pipelined = ph.get("collective") != "alltoall"
            if pipelined and chunk is not None and size is not None and chunk > size:
                out.append(
                    f"jobs[{j}].phases[{p}].chunk_bytes = {chunk:,} is larger than the message "
                    f"(size_bytes = {size:,}): one chunk per step, nothing pipelined"
                )
    return out
