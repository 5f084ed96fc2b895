"""The `cnsim` command line (interface.md). Exit status: 0 success, 2 bad
scenario / option / value (one line naming the parameter), 1 anything else."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from .declarations import scheme_names
from .errors import ScenarioError

# Help in plain text (no rich markup rendering): `cnsim --help` loads no more
# than typer; rich is imported by the commands that print tables.
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="cnsim: packet-level simulator of congestion management in data-center Ethernet.",
)


class _Out:
    """stdout through a rich Console made on first use. Plain text: names and
    messages from scenario files are printed as written, never read as rich
    markup ("use [measure]" keeps its brackets)."""

    _console: Any = None

    def print(self, *a: Any, **k: Any) -> None:
        if self._console is None:
            from rich.console import Console

            self._console = Console(markup=False)
        self._console.print(*a, **k)


out = _Out()


def Table(*a: Any, **k: Any) -> Any:  # noqa: N802 - rich's Table, imported on first use
    from rich.table import Table as RichTable

    return RichTable(*a, **k)


#: The schemes, from their declarations (a data file: the help loads no engine).
SCHEME_HELP = f"congestion management: {', '.join(scheme_names())}"


def _fail(msg: str, code: int) -> NoReturn:
    global _SAID
    _print_error(msg)
    _SAID = True
    raise typer.Exit(code)


_SAID = False  # the command printed why it stops


def _warn(msg: str) -> None:
    """One yellow `warning:` line on stderr; the command goes on."""
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True).print(Text.assemble(("warning:", "yellow"), f" {msg}"), soft_wrap=True)


@app.command("list")
def list_cmd() -> None:
    """Built-in scenarios and schemes, one line each."""
    from .scenario import builtin_names, load
    from .schemes import SCHEMES

    t = Table("scenario", "description", box=None)
    for n in builtin_names():
        t.add_row(n, load(n).model.description)
    out.print(t)
    t = Table("scheme", "description", box=None)
    for n, (_, d) in SCHEMES.items():
        t.add_row(n, d)
    out.print(t)


@app.command()
def show(
    scenario: Annotated[str, typer.Argument(help="built-in name or path to a TOML file")],
    scheme: Annotated[str | None, typer.Option(help="scheme whose defaults to show")] = None,
) -> None:
    """The scenario's full parameter set (TOML), every default filled in."""
    from .scenario import load

    sc = load(scenario, **({"scheme": scheme} if scheme else {}))
    print(sc.to_toml(), end="")


def _scenario(
    scenario: str,
    scheme: str | None,
    pause: bool | None,
    sets: list[str] | None,
    seeds: int | None,
    seed: int | None,
    duration: float | None,
) -> Any:
    from .scenario import apply_sets, load

    sc = load(scenario)
    changes: dict[str, Any] = {}
    if scheme is not None:
        changes["scheme"] = scheme
    if pause is not None:
        changes["pause"] = pause
    if seeds is not None and seed is not None:
        raise ScenarioError("--seeds and --seed: give one of them")
    if seeds is not None:
        if seeds < 1:
            raise ScenarioError(f"--seeds: {seeds} is not allowed; expected an integer >= 1")
        changes["seeds"] = range(seeds)
    if seed is not None:
        if seed < 0:
            raise ScenarioError(f"--seed: {seed} is not allowed; expected an integer >= 0")
        changes["seeds"] = [seed]
    if duration is not None:
        if not 0 < duration <= 1e9:  # also NaN and inf
            raise ScenarioError(
                f"--duration: {duration} is not allowed; expected a number > 0 and <= 1000000000 (ms)"
            )
        changes["duration_ms"] = duration
    if changes:
        sc = sc.replace(**changes)
    return apply_sets(sc, sets or [])


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="built-in name or path to a TOML file")],
    scheme: Annotated[str | None, typer.Option(help=SCHEME_HELP)] = None,
    pause: Annotated[bool | None, typer.Option("--pause/--no-pause", help="IEEE 802.3x PAUSE")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="KEY=VALUE override by dotted name")] = None,
    seeds: Annotated[int | None, typer.Option(help="replications 0..N-1")] = None,
    seed: Annotated[int | None, typer.Option(help="one replication with this seed")] = None,
    duration: Annotated[float | None, typer.Option(help="run length (ms)")] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="results directory (default: results/NAME-TIMESTAMP)")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="replace the results already in --out (never other files)")
    ] = False,
    jobs: Annotated[int | None, typer.Option(help="parallel replications (default: all cores)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as one JSON object")] = False,
    report: Annotated[bool, typer.Option(help="write report.html and plots")] = True,
    backend: Annotated[str, typer.Option(help="local (threads) or dask (one task per seed)")] = "local",
    address: Annotated[
        str | None, typer.Option(help="tcp://HOST:PORT of a running Dask scheduler (implies --backend dask)")
    ] = None,
    pcap: Annotated[
        list[str] | None,
        typer.Option(
            "--pcap",
            help="capture the frames leaving port FROM->TO to pcap/FROM-to-TO.seedK.pcapng (Wireshark); repeatable",
        ),
    ] = None,
) -> None:
    """Run replications, print the summary, write results."""
    from .runner import run as run_scenario

    if address is not None:
        backend = "dask"
    if backend not in ("local", "dask"):
        raise ScenarioError(f"--backend: {backend!r} is not allowed; expected local or dask")
    if jobs is not None and jobs < 1:
        raise ScenarioError(f"--jobs: {jobs} is not allowed; expected an integer >= 1")
    from .executor import Interrupted
    from .outdir import RunDir, default_dir

    sc = _scenario(scenario, scheme, pause, set_, seeds, seed, duration)
    if pcap:
        sc = sc.replace(
            **{"trace.pcap": [*sc.model.trace.pcap, *(p for p in pcap if p not in sc.model.trace.pcap)]}
        )
    from .guards import check_run_memory
    from .trace import TraceCapWarning, records, unintended

    for line in unintended(sc):
        _warn(line)
    check_run_memory(sc)
    target = out_dir or default_dir(sc.name)
    rd = RunDir(target, force=force)  # checked and locked before anything runs
    try:
        try:
            # A trace is written straight into the results directory's temporary sibling;
            # a trace's row cap is reported below, as one line.
            warnings.simplefilter("ignore", TraceCapWarning)
            res = run_scenario(
                sc,
                jobs=jobs,
                progress=None if not as_json else False,
                backend=backend,
                address=address,
                trace_dir=rd.tmp if records(sc) else None,
            )
        except Interrupted as e:
            part = getattr(e, "results", None)
            if part is None:
                rd.abort()
                _fail("interrupted before any seed finished; nothing was saved", 130)
            assert rd.tmp is not None
            part.write(rd.tmp, report=False)
            rd.commit()
            _fail(
                f"interrupted: {len(part.seeds)} of {len(sc.seeds)} seeds finished, saved in {target} "
                "(summary.json: complete = false)",
                130,
            )
        assert rd.tmp is not None
        res.write(rd.tmp, report=report)
        rd.commit()
    except BaseException:
        rd.abort()
        raise
    summary = res.summary_dict()
    if as_json:
        print(json.dumps({**summary, "out": str(target)}))
        return
    t = Table(
        "metric",
        "mean",
        "95% CI",
        "std",
        "min",
        "max",
        title=f"{sc.name} / {sc.scheme}{' + PAUSE' if sc.pause else ''} / {len(sc.seeds)} seed(s)",
    )
    for k, v in summary["metrics"].items():
        ci = "" if v["ci_half"] is None else f"+-{_fmt(v['ci_half'])}"
        t.add_row(k, _fmt(v["mean"]), ci, _fmt(v["std"]), _fmt(v["min"]), _fmt(v["max"]))
    out.print(t)
    agg = summary["aggregates"]
    if "transient_ms" in agg:
        rtt = agg["transient_rtt_ms"]
        parts = []
        for name, key in (("transient (knee)", "transient"), ("settling time", "settling")):
            ms = agg.get(f"{key}_ms")
            parts.append(f"{name} " + ("not reached" if ms is None else f"{ms:g} ms = {ms / rtt:.1f} RTTs"))
        out.print(f"{'; '.join(parts)} (over {len(sc.seeds)} seeds, RTT {rtt:g} ms)")
    e = summary["engine"]
    out.print(
        f"engine: {e['frames']:,} frames, {e['events']:,} events, {e['wall_s']:.2f} s, "
        f"{(e['frames_delivered_per_s'] or 0) / 1e6:.2f} M delivered frames/s"
    )
    out.print(f"results: {target}" + (f"  report: {target / 'report.html'}" if report else ""))
    _print_trace(res, target)
    _warn_untraced(sc, res)


def _print_trace(res: Any, target: Path) -> None:
    """Where the event trace and the captures are, and whether a trace hit its row cap."""
    if res.trace is None:
        return
    from .trace import warnings as cap_warnings

    t = res.trace.summary()
    if t["events"]:
        rows = sum(t["rows"].values())
        out.print(f"events: {target / t['events']} ({rows:,} rows; cnsim.open_results(DIR).events())")
    if t["pcap"]:
        names = [p.rsplit("/", 1)[-1] for p in t["pcap"]]
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        out.print(f"captures: {target / 'pcap'} ({shown}; open them in Wireshark)")
    for w in cap_warnings(res.trace.per_seed or {}):
        _warn(w)


def _warn_untraced(sc: Any, res: Any) -> None:
    """Names in trace.rate_limiters that no rate limiter (or flow sender) had
    in any seed: a typo, or a pair with no flow, would otherwise trace nothing
    silently."""
    asked = sc.model.trace.rate_limiters
    if not asked:
        return
    seen = {k for run in res.runs for (name, k) in run.series_keys() if name == "rl_rate"}
    missing = [k for k in asked if k not in seen]
    if missing:
        _warn(
            f"trace.rate_limiters: no rate limiter {', '.join(missing)} existed in this run "
            "(a flow's sender is SRC|DST; an RL exists only once a notification created it)"
        )


@app.command()
def sweep(
    scenario: Annotated[str, typer.Argument(help="built-in name or path to a TOML file")],
    grid: Annotated[
        list[str] | None,
        typer.Option(
            help="KEY=V1,V2,...: a swept parameter (dotted --set name, scheme or pause) and its values; "
            "repeat for a cartesian product"
        ),
    ] = None,
    scheme: Annotated[str | None, typer.Option(help=SCHEME_HELP)] = None,
    pause: Annotated[bool | None, typer.Option("--pause/--no-pause", help="IEEE 802.3x PAUSE")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="KEY=VALUE override of every point, by dotted name")
    ] = None,
    seeds: Annotated[int | None, typer.Option(help="replications 0..N-1 of every point")] = None,
    seed: Annotated[int | None, typer.Option(help="one replication with this seed")] = None,
    duration: Annotated[float | None, typer.Option(help="run length (ms)")] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="sweep directory; rerun with the same one to resume"),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            help="parallel replications: threads (local) or LocalCluster workers (dask); default all cores"
        ),
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help="local (default) or dask (a LocalCluster, or --address)")
    ] = None,
    address: Annotated[
        str | None, typer.Option(help="tcp://HOST:PORT of a running Dask scheduler (implies --backend dask)")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="discard another sweep's results in --out instead of refusing")
    ] = False,
    report: Annotated[
        bool, typer.Option(help="write each point's report and the sweep's report.html")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="print what was done as one JSON object")] = False,
) -> None:
    """Run a scenario over the cartesian product of parameter grids x seeds: one results
    directory per point, DIR/sweep.parquet, DIR/report.html; resumable."""
    import signal

    from .scenario import apply_sets
    from .sweeps import parse_grid, run_sweep

    if backend is None:
        backend = "dask" if address is not None else "local"
    g = parse_grid(grid or [])
    base = _scenario(scenario, scheme, pause, None, seeds, seed, duration)
    try:
        sc = apply_sets(base, set_ or [])
    except ScenarioError as alone:
        if not g:
            raise
        # A --set that only holds with the swept values (topology.variant=B with a grid
        # of B's degrees) is checked at the first point; every point is checked whole.
        try:
            sc = apply_sets(base.replace(**{k: v[0] for k, v in g.items()}), set_ or [])
        except ScenarioError:
            raise alone from None
    from .outdir import default_dir
    from .trace import records

    if records(sc):
        _warn(
            "trace.events / trace.pcap: a sweep records no event trace or capture; run one point with cnsim run"
        )
    target = out_dir or default_dir(sc.name, "-sweep")

    def _terminated(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # finished points are on disk; stop the rest cleanly

    old = signal.signal(signal.SIGTERM, _terminated)
    try:
        res = run_sweep(
            sc,
            g,
            backend=backend,
            out=target,
            jobs=jobs,
            address=address,
            force=force,
            report=report,
            progress=None if not as_json else False,
        )
    except KeyboardInterrupt:
        kept = target.is_dir() and any(p.name.startswith("p") and p.is_dir() for p in target.iterdir())
        _fail(
            f"interrupted; the finished points are kept in {target}: run the same command again to resume"
            if kept
            else "interrupted before any point finished; nothing was saved",
            130,
        )
    finally:
        signal.signal(signal.SIGTERM, old)
    info = {
        "out": str(target),
        "points": res.points,
        "seeds": len(sc.seeds),
        "ran": res.ran,
        "skipped": res.skipped,
        "rows": res.frame.height,
    }
    if as_json:
        print(json.dumps(info))
        return
    done = f"{res.ran} run" + (f", {res.skipped} already finished" if res.skipped else "")
    out.print(f"sweep: {res.points} point(s) x {len(sc.seeds)} seed(s): {done}")
    out.print(
        f"results: {target}  table: {target / 'sweep.parquet'}"
        + (f"  report: {target / 'report.html'}" if report else "")
    )


@app.command("report")
def report_cmd(
    directory: Annotated[Path, typer.Argument(help="a sweep directory or a run's results directory")],
) -> None:
    """Write DIR/report.html: a sweep's metrics against each swept parameter (mean and
    95% confidence band over seeds), or a run's plots again from its files."""
    from .report import rebuild_report, write_sweep_report
    from .sweeps import SWEEP_JSON, damaged_points, read_meta, sweep_frame

    if not directory.is_dir():
        raise ScenarioError(f"report: {directory} is not a directory")
    if (directory / SWEEP_JSON).is_file():
        meta = read_meta(directory)
        for pid in damaged_points(directory, meta):
            _warn(
                f"{directory / pid}/summary.json is missing or damaged; "
                "the point is left out of the report (resuming the sweep redoes it)"
            )
        path = write_sweep_report(directory, meta, sweep_frame(directory, meta))
    else:
        path = rebuild_report(directory)
    out.print(f"report: {path}")


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and abs(v) >= 1e4:
        return f"{v:,.0f}"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


#: `cnsim bench --workload`: built-in scenarios timed as one seed on one core.
BENCH_SCENARIOS = {
    "singlehop": "singlehop_hotspot",
    "fattree": "fattree_hotspot",
    "multihop": "multihop_hotspot",
}


@app.command()
def bench(
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
    duration_ms: Annotated[
        float | None, typer.Option(help="simulated time (ms; default: the workload's, 1000 for the incast)")
    ] = None,
    workload: Annotated[
        str,
        typer.Option(
            help="incast (performance.md); a built-in benchmark: singlehop, multihop, fattree; or scale "
            "(fat trees of 64 to 4096 hosts, 10 ms at 85% uniform load, each in its own process)"
        ),
    ] = "incast",
    hosts: Annotated[
        str | None,
        typer.Option(
            help="scale: fabric sizes, comma-separated, of 64, 512, 1000, 1024, 4096 (default: 64,512,1024,4096)"
        ),
    ] = None,
    scheme: Annotated[
        str | None, typer.Option(help="scheme of a scenario workload (default: the scenario's)")
    ] = None,
    pause: Annotated[
        bool | None, typer.Option("--pause/--no-pause", help="PAUSE for a scenario workload")
    ] = None,
    repeat: Annotated[
        int,
        typer.Option(
            help="runs of each workload (scale: of each size, the sizes taking turns); the fastest is "
            "reported, peak memory is the largest"
        ),
    ] = 1,
) -> None:
    """Engine speed, one seed on one core: by default the 1-second 4-to-1 incast of
    performance.md (nocm); `--workload singlehop|multihop|fattree` times a 1 s benchmark scenario;
    `--workload scale` fabrics of 64 to 4096 hosts."""
    from . import _core

    if duration_ms is not None and not 0 < duration_ms <= 1e9:  # also NaN and inf
        raise ScenarioError(
            f"--duration-ms: {duration_ms} is not allowed; expected a number > 0 and <= 1000000000"
        )
    if not 1 <= repeat <= 100:
        raise ScenarioError(f"--repeat: {repeat} is not allowed; expected an integer from 1 to 100")
    if hosts is not None and workload != "scale":
        raise ScenarioError("--hosts: only the scale workload has fabric sizes")
    if workload == "scale":
        _bench_scale(hosts, duration_ms or 10.0, scheme, pause, as_json, repeat)
        return
    if workload == "incast":
        if scheme is not None or pause is not None:
            raise ScenarioError("--scheme / --pause: the incast workload is nocm without PAUSE")
        ms = duration_ms or 1000.0
        cfg = _core.incast_config_json(round(ms * 1e9))
        label = "4-to-1 incast, 4 x 4.9 Gbit/s into 10 Gbit/s, 150 KB buffers, nocm"
    elif workload in BENCH_SCENARIOS:
        from .scenario import load

        changes: dict[str, Any] = {"seeds": [0]}
        if scheme is not None:
            changes["scheme"] = scheme
        if pause is not None:
            changes["pause"] = pause
        if duration_ms is not None:
            changes["duration_ms"] = duration_ms
        sc = load(BENCH_SCENARIOS[workload]).replace(**changes)
        ms = sc.duration_ms
        cfg = sc.engine_config_checked()
        label = f"{sc.name}, {sc.scheme}{' + PAUSE' if sc.pause else ''}, seed 0"
    else:
        raise ScenarioError(
            f"--workload: {workload!r} is not allowed; expected incast, " + ", ".join(BENCH_SCENARIOS)
        )
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        fig = _bench_once(cfg, label, ms)
        if best is None or fig["events_per_s"] > best["events_per_s"]:
            best = fig
    assert best is not None
    fig = best
    fig["runs"] = repeat
    fig["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if as_json:
        print(json.dumps(fig))
        return
    t = Table(
        "figure",
        "value",
        title=f"cnsim bench: {fig['workload']}" + (f", best of {repeat}" if repeat > 1 else ""),
    )
    t.add_row("frames generated", f"{fig['frames']:,}")
    t.add_row("frames delivered", f"{fig['frames_delivered']:,}")
    t.add_row("delivered frames per wall second", f"{fig['frames_delivered_per_s'] / 1e6:.2f} M")
    t.add_row("events", f"{fig['events']:,}")
    t.add_row("events per second", f"{fig['events_per_s'] / 1e6:.2f} M")
    t.add_row("simulated seconds per wall second", f"{fig['sim_speed']:.2f}")
    t.add_row("wall time (engine)", f"{fig['wall_s']:.3f} s")
    t.add_row("peak memory", f"{fig['peak_rss_mb']:.0f} MB")
    out.print(t)


def _bench_once(cfg: Any, label: str, ms: float) -> dict[str, Any]:
    """One timed run of an engine config; its figures."""
    from . import _core

    try:
        sim = _core.Simulation(cfg, 0)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    t0 = time.perf_counter()
    _in_thread(sim.run)  # Ctrl-C is seen at once
    wall_total = time.perf_counter() - t0
    r = sim.results()
    e = r["engine"]
    wall = max(e["wall_s"], 1e-9)
    return {
        "workload": label,
        "simulated_s": ms / 1000,
        "frames": r["frames"]["generated"],
        "frames_delivered": r["frames"]["delivered"],
        "frames_delivered_per_s": r["frames"]["delivered"] / wall,
        "events": e["events"],
        "events_per_s": e["events"] / wall,
        "wall_s": e["wall_s"],
        "wall_s_with_results": wall_total,
        "sim_speed": ms / 1000 / wall,
        "version": _core.version(),
    }


def _bench_scale(
    hosts: str | None, ms: float, scheme: str | None, pause: bool | None, as_json: bool, repeat: int = 1
) -> None:
    from .benchscale import DEFAULT_HOSTS, best_of, run_sizes

    try:
        sizes = [int(h) for h in hosts.split(",")] if hosts else list(DEFAULT_HOSTS)
    except ValueError:
        raise ScenarioError(
            f"--hosts: {hosts!r} is not allowed; expected sizes such as 64,512,4096"
        ) from None
    rounds = []
    for _ in range(repeat):
        if as_json:
            rounds.append(_in_thread(run_sizes, sizes, ms, scheme, pause))
        else:
            rounds.append(list(_scale_progress(sizes, ms, scheme, pause)))
    rows = best_of(rounds)
    if as_json:
        print(
            json.dumps(
                {
                    "workload": "scale",
                    "simulated_ms": ms,
                    "runs": repeat,
                    "sizes": rows,
                    "version": _core_version(),
                }
            )
        )
        return
    smallest = rows[0]["hosts"]
    t = Table(
        "hosts",
        "k, n",
        "events/s",
        f"vs {smallest:,} hosts",
        "delivered frames/s",
        "engine wall",
        "wall with results",
        "peak memory",
        title=f"cnsim bench: scale, {rows[0]['scheme']}, {ms:g} simulated ms at 85% uniform load, seed 0"
        + (f", best of {repeat}" if repeat > 1 else ""),
    )
    for f in rows:
        t.add_row(
            f"{f['hosts']:,}",
            f"{f['k']}, {f['n']}",
            f"{f['events_per_s'] / 1e6:.2f} M",
            f"{f['events_per_s_vs_smallest']:.0%}",
            f"{f['frames_delivered_per_s'] / 1e6:.2f} M",
            f"{f['engine_wall_s']:.2f} s",
            f"{f['wall_s_with_results']:.2f} s",
            f"{f['peak_rss_mb']:.0f} MB",
        )
    out.print(t)


def _scale_progress(sizes: list[int], ms: float, scheme: str | None, pause: bool | None) -> Any:
    """Each size in turn, saying which one runs (they take seconds to minutes)."""
    from rich.console import Console

    from .benchscale import run_sizes

    for h in sizes:
        Console(stderr=True, markup=False).print(f"running the {h:,}-host fabric ...")
        yield from _in_thread(run_sizes, [h], ms, scheme, pause)


def _core_version() -> str:
    from . import _core

    return _core.version()


@app.command()
def validate(
    only: Annotated[str | None, typer.Option(help="run one study")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
    jobs: Annotated[int | None, typer.Option(help="parallel replications")] = None,
) -> None:
    """Published figures vs this simulator, side by side; exit 1 if any is out of tolerance."""
    from .validate import STUDIES

    if jobs is not None and jobs < 1:
        raise ScenarioError(f"--jobs: {jobs} is not allowed; expected an integer >= 1")
    if only is not None and only not in STUDIES:
        raise ScenarioError(f"--only: {only!r} is not a study; studies: {', '.join(STUDIES)}")
    rows = []
    for name, study in STUDIES.items():
        if only is None or only == name:
            rows.extend(study(jobs, not as_json and sys.stderr.isatty()))
    bad = [r for r in rows if not r.ok]
    if as_json:
        print(json.dumps({"rows": [r.as_dict() for r in rows], "all_within": not bad}))
    else:
        from rich.text import Text

        # One table per study, so the figure's description gets the width.
        for study_name in dict.fromkeys(r.study for r in rows):
            t = Table(
                "figure",
                "published",
                "cnsim",
                "tolerance",
                "within?",
                "in CI?",
                title=f"cnsim validate: {study_name}",
            )
            for r in rows:
                if r.study != study_name:
                    continue
                ours = _fmt(r.ours) + ("" if r.ci is None else f" [{_fmt(r.ci[0])}, {_fmt(r.ci[1])}]")
                t.add_row(
                    r.figure,
                    _fmt(r.published),
                    ours,
                    r.tolerance,
                    Text("yes", style="green")
                    if r.ok
                    else (
                        Text.assemble(("NO", "yellow"), f" ({r.known})")
                        if r.known
                        else Text("NO", style="red")
                    ),
                    {True: "yes", False: "no", None: "-"}[r.in_ci],
                )
            out.print(t)
        out.print(f"{len(rows) - len(bad)} of {len(rows)} figures within tolerance")
        known = [r for r in bad if r.known]
        if known:
            out.print(
                f"{len(known)} of the {len(bad)} others are known disagreements with the published run, "
                "each explained under its name in docs/calibration.md"
            )
    if bad:
        raise typer.Exit(1)


@app.command()
def fluid(
    scenario: Annotated[
        str, typer.Argument(help="built-in name or TOML file (one destination, or a hotspot node)")
    ],
    scheme: Annotated[
        str | None, typer.Option(help="nocm, bcn, bcnmax, ecm, qcn, qcn2pt, dcqcn, dctcp, timely")
    ] = None,
    pause: Annotated[
        bool | None,
        typer.Option("--pause/--no-pause", help="PAUSE (not in the fluid model: --pause is refused)"),
    ] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="KEY=VALUE override by dotted name")] = None,
    seeds: Annotated[
        int | None, typer.Option(help="packet replications 0..N-1 (default: the scenario's)")
    ] = None,
    duration: Annotated[float | None, typer.Option(help="run length (ms)")] = None,
    step_us: Annotated[float, typer.Option(help="integration step (us)")] = 0.1,
    dest: Annotated[
        str | None,
        typer.Option(
            help="model the flows into this station (default: the only destination, else the hotspot node)"
        ),
    ] = None,
    packet: Annotated[bool, typer.Option(help="also run the packet simulator and compare")] = True,
    out_dir: Annotated[Path | None, typer.Option("--out", help="results directory")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="replace the fluid results already in --out")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Fluid model of BCN / QCN / DCQCN / DCTCP / TIMELY on one bottleneck, beside the packet simulator (same axes)."""
    from .fluid import compare, comparison_window, plot_comparison, run_fluid
    from .outdir import FLUID_FILES, RunDir, default_dir

    sc = _scenario(scenario, scheme, pause, set_, seeds, None, duration)
    target = out_dir or default_dir(sc.name, "-fluid")
    rd = RunDir(target, force=force, marker="fluid.json", allowed=FLUID_FILES)
    try:
        summary, fl_flows, fl_wall = _fluid_into(
            rd, sc, step_us, dest, packet, compare, comparison_window, plot_comparison, run_fluid
        )
    except BaseException:
        rd.abort()
        raise
    if as_json:
        print(json.dumps({**summary, "out": str(target)}))
        return
    if packet:
        lo, hi = summary["window_ms"]
        t = Table("figure", "fluid", "packet", title=f"{sc.name} / {sc.scheme}: means over {lo:g}-{hi:g} ms")
        for row in summary["rows"]:
            t.add_row(row["figure"], _fmt(row["fluid"]), _fmt(row["packet"]))
        out.print(t)
    st = summary["fluid_stability"]
    lo, hi = summary["window_ms"]
    out.print(
        f"fluid model: {fl_flows} flows, integrated in {fl_wall * 1e3:.0f} ms; "
        + ("settled" if st["settled"] else "not settled")
        + f" by the last fifth of {lo:g}-{hi:g} ms (queue swing {st['queue_swing_kb']:.1f} KB, "
        f"rate swing {st['rate_swing_gbps']:.3f} Gbit/s)"
    )
    out.print(f"results: {target}" + (f"  plot: {target / 'fluid.png'}" if packet else ""))


def _fluid_into(
    rd: Any,
    sc: Any,
    step_us: float,
    dest: str | None,
    packet: bool,
    compare: Any,
    window: Any,
    plot: Any,
    run: Any,
) -> tuple[dict[str, Any], int, float]:
    """Runs the fluid model (and the packet simulator), writes into `rd` and
    commits it. Returns the summary, the fluid model's flows and wall time."""
    tmp = rd.tmp
    if packet:
        c = _in_thread(compare, sc, step_us, dest=dest)
        fl = c.fluid
        summary = {"scenario": sc.name, "scheme": sc.scheme, "seeds": list(sc.seeds), **c.as_dict()}
        plot(c, tmp / "fluid.png")
        c.packet.write(tmp / "packet", report=False)
    else:
        fl = _in_thread(run, sc, step_us, dest)
        lo, hi = window(sc.engine_config())
        summary = {
            "scenario": sc.name,
            "scheme": sc.scheme,
            "window_ms": [lo, hi],
            "fluid_stability": fl.stability(lo, hi),
            "fluid_wall_s": fl.wall_s,
        }
    fl.timeseries().write_parquet(tmp / "fluid.parquet")
    (tmp / "fluid.json").write_text(json.dumps(summary, indent=1))
    rd.commit()
    return summary, len(fl.config["flows"]), fl.wall_s


def _in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args)` on a worker thread while this (main) thread waits, so that
    Ctrl-C interrupts a long engine call at once (the engine itself cannot be
    interrupted: the process then exits without waiting for it)."""
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            box["error"] = e

    t = threading.Thread(target=target, daemon=True, name="cnsim-engine")
    t.start()
    while t.is_alive():
        t.join(0.1)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _on_signal(signum: int, frame: Any) -> None:
    """SIGINT / SIGTERM: the first stops the command cleanly (KeyboardInterrupt:
    finished seeds are kept), a second exits at once."""
    global _SIGNALS
    _SIGNALS += 1
    if _SIGNALS > 1:
        os._exit(130)
    raise KeyboardInterrupt


_SIGNALS = 0


def _exit_now(code: int) -> None:
    """Exits without waiting for an engine call still running on a worker thread."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    """Entry point: maps errors to exit codes, never shows a traceback for bad input."""
    import signal

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    try:
        # Not standalone: typer returns the code of a `typer.Exit` (and 130 for Ctrl-C) instead of exiting.
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            if code == 130:  # Ctrl-C: say what was kept, and do not wait for the engine
                if not _SAID:
                    _print_error("interrupted; nothing was saved")
                _exit_now(130)
            sys.exit(code)
    except ScenarioError as e:
        _print_error(str(e))
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _print_error("interrupted; nothing was saved")
        _exit_now(130)
    except Exception as e:  # noqa: BLE001
        # Usage errors of typer's click: one line, with where to read more.
        if hasattr(e, "format_message") and isinstance(getattr(e, "exit_code", None), int):
            ctx = getattr(e, "ctx", None)
            where = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
            _print_error(f"{e.format_message()}{where}")
            sys.exit(e.exit_code)
        if os.environ.get("CNSIM_DEBUG"):
            raise
        _print_error(f"{type(e).__name__}: {e}")
        sys.exit(1)
    sys.exit(0)


def _print_error(msg: str) -> None:
    """One line on stderr; the message is plain text, never rich markup."""
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True).print(
        Text.assemble(("error:", "bold red"), " ", msg), highlight=False, soft_wrap=True
    )


if __name__ == "__main__":
    main()
