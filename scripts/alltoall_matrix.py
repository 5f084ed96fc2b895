"""Writes a pairwise all-to-all as a connection matrix of the Ultra Ethernet
reference simulator, to run the collectives check there (docs/calibration.md
section 10):

    python scripts/alltoall_matrix.py 128 1048576 2 a2a.cm
    htsim_uec -tm a2a.cm -sender_cc_only -end 100000 -paths 64

Round r (1 .. n - 1): rank i exchanges with i xor r (n a power of two). A
pair's round r + w starts once both its flows of round r are done: one
barrier trigger of count 2 per pair and round, which is cnsim's pairwise
plan (`chunks_in_flight = w`). The same file runs in cnsim as
`workload.kind = "matrix"` and gives cnsim's planned result to the byte.
"""

from __future__ import annotations

import sys
from pathlib import Path


def pairwise(n: int, size: int, w: int) -> str:
    """The matrix text: n ranks on hosts 0 .. n - 1, `size` bytes per pair,
    `w` rounds in flight."""
    if n < 2 or n & (n - 1):
        raise SystemExit(f"ranks {n}: a power of two of at least 2 (the xor pairing)")
    if not 1 <= w < n:
        raise SystemExit(f"rounds in flight {w}: from 1 to {n - 1}")
    triggers: dict[tuple[int, int], int] = {}

    def trigger(r: int, i: int) -> int:
        # One barrier per pair {i, i xor r} and round r.
        return triggers.setdefault((r, min(i, i ^ r)), len(triggers) + 1)

    lines = []
    for r in range(1, n):
        for i in range(n):
            line = f"{i}->{i ^ r} id {len(lines) + 1}"
            line += " start 0" if r <= w else f" trigger {trigger(r - w, i)}"
            line += f" size {size}"
            if r + w < n:
                line += f" send_done_trigger {trigger(r, i)}"
            lines.append(line)
    head = [f"Nodes {n}", f"Connections {len(lines)}", f"Triggers {len(triggers)}"]
    tail = [f"trigger id {t} barrier count 2" for t in sorted(triggers.values())]
    return "\n".join(head + lines + tail) + "\n"


def main() -> None:
    if len(sys.argv) != 5:
        raise SystemExit("usage: alltoall_matrix.py RANKS BYTES_PER_PAIR ROUNDS_IN_FLIGHT OUT.cm")
    n, size, w = (int(a) for a in sys.argv[1:4])
    Path(sys.argv[4]).write_text(pairwise(n, size, w))


if __name__ == "__main__":
    main()
