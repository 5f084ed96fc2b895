"""UET's paths sweep: 1 to 128 entropies on the reference's 1,024-node
permutation, for every load balancer (docs/uet.md, "Paths: a sweep of 1-128
on the 1,024-node permutation").

    python scripts/uet_paths_sweep.py [--out-root /tmp/uet_paths_sweep] [--parallel 1] [--reuse]

Runs `cnsim run uet_fattree --set uet.paths=P --set uet.balancer=B --jobs 1
--no-report --out DIR --force` (the 1,024-host fat tree, the 2,000,000-byte
permutation perm_1024n_1024c_0u_2000000b.cm, seed 0) for P in 1, 2, 4, ...,
128 and B in oblivious, bitmap, reps, mixed: 32 runs of about 10 s each. From
each run's flows.parquet it takes the first, median, 99th percentile and last
(tail) FCT, both the sender's (`fct_acked_us`, to the last acknowledgement:
what the reference publishes) and the receiver's (`fct_us`), and from its
summary.json the frames trimmed, retransmitted and timeouts. Writes
docs/img/uet_paths_sweep.csv and docs/img/uet_paths_sweep.png (tail and
median sender FCT against paths, one line per balancer, the ideal FCT of a
lone 2 MB flow dashed). `--reuse` reads the runs already in --out-root
instead of running them again.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = "uet_fattree"
PATHS = [1, 2, 4, 8, 16, 32, 64, 128]
BALANCERS = ["oblivious", "bitmap", "reps", "mixed"]
#: The reference's published tail (ultraethernet/uet-htsim, validate_uec_sender.out): 128 paths, mixed.
REFERENCE_TAIL_US = 200.5
CSV = ROOT / "docs" / "img" / "uet_paths_sweep.csv"
PNG = ROOT / "docs" / "img" / "uet_paths_sweep.png"


@dataclass
class Point:
    """One run's figures (times in us)."""

    balancer: str
    paths: int
    flows: int
    flows_completed: int
    first_acked_us: float
    median_acked_us: float
    p99_acked_us: float
    tail_acked_us: float
    first_us: float
    median_us: float
    p99_us: float
    tail_us: float
    ideal_us: float  # the longest path's ideal FCT of a lone flow (flows' ideal_fct_us, max)
    frames_trimmed: int
    retransmitted_frames: int
    timeouts: int
    header_drops: int


def cnsim_command() -> list[str]:
    """The `cnsim` beside this interpreter, else `python -m cnsim`."""
    script = Path(sys.executable).parent / "cnsim"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "cnsim"]


def run_dir(root: Path, balancer: str, paths: int) -> Path:
    return root / f"{balancer}-p{paths}"


def run(root: Path, balancer: str, paths: int, reuse: bool) -> Path:
    """One `cnsim run` of the case (unless --reuse finds it done); its results directory."""
    out = run_dir(root, balancer, paths)
    if reuse and (out / "summary.json").is_file() and (out / "flows.parquet").is_file():
        return out
    cmd = [
        *cnsim_command(),
        "run",
        SCENARIO,
        "--set",
        f"uet.paths={paths}",
        "--set",
        f"uet.balancer={balancer}",
        "--jobs",
        "1",
        "--no-report",
        "--out",
        str(out),
        "--force",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        raise RuntimeError(f"{balancer}, {paths} paths: cnsim run failed: {last}")
    return out


def metric(summary: dict[str, object], name: str) -> int:
    """A count metric of the run's summary.json (one seed: its mean), 0 when absent."""
    metrics = summary.get("metrics", {})
    assert isinstance(metrics, dict)
    m = metrics.get(name)
    if not isinstance(m, dict) or m.get("mean") is None:
        return 0
    return int(m["mean"])


def read(out: Path, balancer: str, paths: int) -> Point:
    """The figures of one finished run."""
    flows = pl.read_parquet(out / "flows.parquet")
    summary = json.loads((out / "summary.json").read_text())
    done = flows.filter(pl.col("acked_ps").is_not_null() & pl.col("finish_ps").is_not_null())
    acked, fct = done["fct_acked_us"], done["fct_us"]

    def q(s: pl.Series, p: float) -> float:
        v = s.quantile(p, interpolation="linear")
        return float(v) if v is not None else float("nan")

    return Point(
        balancer=balancer,
        paths=paths,
        flows=flows.height,
        flows_completed=done.height,
        first_acked_us=q(acked, 0.0),
        median_acked_us=q(acked, 0.5),
        p99_acked_us=q(acked, 0.99),
        tail_acked_us=q(acked, 1.0),
        first_us=q(fct, 0.0),
        median_us=q(fct, 0.5),
        p99_us=q(fct, 0.99),
        tail_us=q(fct, 1.0),
        ideal_us=float(flows["ideal_fct_us"].max()),  # type: ignore[arg-type]
        frames_trimmed=metric(summary, "frames_trimmed"),
        retransmitted_frames=metric(summary, "retransmitted_frames"),
        timeouts=metric(summary, "timeouts"),
        header_drops=metric(summary, "header_drops"),
    )


def plot(table: pl.DataFrame, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    colors = {"oblivious": "tab:blue", "bitmap": "tab:orange", "reps": "tab:green", "mixed": "tab:red"}
    for b in BALANCERS:
        rows = table.filter(pl.col("balancer") == b).sort("paths")
        if rows.is_empty():
            continue
        c = colors.get(b)
        ax.plot(rows["paths"], rows["tail_acked_us"], "o-", color=c, label=f"{b}: tail")
        ax.plot(rows["paths"], rows["median_acked_us"], "s:", color=c, alpha=0.7, label=f"{b}: median")
    ideal = float(table["ideal_us"].max())  # type: ignore[arg-type]
    ax.axhline(
        ideal,
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"ideal, a lone 2 MB flow across pods ({ideal:.1f} us, last byte)",
    )
    ax.plot(
        [128],
        [REFERENCE_TAIL_US],
        "k*",
        markersize=11,
        label=f"reference, 128 / mixed ({REFERENCE_TAIL_US} us)",
    )
    ax.set_xscale("log", base=2)
    ax.set_xticks(PATHS, [str(p) for p in PATHS])
    ax.set_yscale("log")
    ax.set_ylim(bottom=160)
    ticks = [t for t in (175, 200, 250, 300, 400, 500, 600, 800, 1000) if t <= 1.1 * ax.get_ylim()[1]]
    ax.set_yticks(ticks, [str(t) for t in ticks])
    ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("paths (uet.paths, entropies per flow)")
    ax.set_ylabel("FCT to the last ACK, fct_acked_us (us, log)")
    ax.set_title("UET on the 1,024-host fat tree, 2 MB permutation (seed 0)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out-root", type=Path, default=Path("/tmp/uet_paths_sweep"), help="the runs' directories"
    )
    ap.add_argument("--parallel", type=int, default=1, help="runs at once (each one core)")
    ap.add_argument("--reuse", action="store_true", help="read runs already in --out-root")
    ap.add_argument("--csv", type=Path, default=CSV)
    ap.add_argument("--png", type=Path, default=PNG)
    args = ap.parse_args()
    cases = [(b, p) for b in BALANCERS for p in PATHS]

    def one(case: tuple[str, int]) -> Point:
        b, p = case
        pt = read(run(args.out_root, b, p, args.reuse), b, p)
        print(
            f"{b:>9} {p:>4} paths: tail {pt.tail_acked_us:9.1f} us, median {pt.median_acked_us:8.1f}, "
            f"first {pt.first_acked_us:6.1f}, trimmed {pt.frames_trimmed:,}",
            flush=True,
        )
        return pt

    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        points = list(pool.map(one, cases))
    table = pl.DataFrame([asdict(p) for p in points])
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(args.csv, float_precision=2)
    plot(table, args.png)
    print(f"wrote {args.csv} and {args.png}")


if __name__ == "__main__":
    main()
