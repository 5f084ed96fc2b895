"""The `cnsim` command line (README.md; docs/results.md, docs/sweeps.md). Exit status: 0 success, 2 bad
scenario / option / value (one line naming the parameter), 1 anything else."""

from __future__ import annotations

import gc

# A command is a short process that makes few reference cycles: collect young
# objects every 50,000 allocations, not every 700 (import, scenario reading and
# results otherwise pay some 60 collections, about 3% of a small run).
gc.set_threshold(50_000, 10, 10)

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from . import signals
from .bench import bench
from .console import Table, Text, fmt, out, print_error, warn
from .declarations import declarations, scheme_names
from .errors import ScenarioError, ScenarioWarning
from .signals import exit_now, finish, in_thread, terminate_as_interrupt

# Help in plain text (no rich markup rendering): `cnsim --help` loads typer
# and nothing heavier; rich is imported by the commands that print tables.
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="cnsim: packet-level simulator of congestion management in data-center Ethernet.",
)


@app.callback()
def _commands() -> None:
    # A group even when main() hands typer the one command asked for (`_only`).
    pass


#: The schemes, from their declarations (a data file: the help loads no engine).
SCHEME_HELP = f"congestion management: {', '.join(scheme_names())}"
FIDELITY_HELP = "packet (every frame) or flow (the flow-level model, docs/flow-level.md)"


def _fluid_schemes() -> str:
    """The schemes the fluid model integrates, as the engine declares them
    (fluid.rs refuses the others by name); PAUSE, and so the `pause`
    scheme, is not in the fluid model."""
    return ", ".join(s["name"] for s in declarations()["schemes"] if s["fluid"] and s["name"] != "pause")


def _fail(msg: str, code: int) -> NoReturn:
    global _SAID
    print_error(msg)
    _SAID = True
    raise typer.Exit(code)


_SAID = False  # the command printed why it stops


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
    fidelity: str | None = None,
) -> Any:
    from .scenario import apply_sets, load

    changes: dict[str, Any] = {}
    if scheme is not None:
        changes["scheme"] = scheme
    if fidelity is not None:
        changes["fidelity"] = fidelity
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
    # The duration is applied with the --set values, in one step, so that the
    # windows are fitted to it against the values that run (a hotspot moved
    # by --set is not warned about where it was in the file).
    first = {"duration_ms": duration} if duration is not None else {}
    return apply_sets(load(scenario, **changes), sets or [], first=first)


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="built-in name or path to a TOML file")],
    scheme: Annotated[str | None, typer.Option(help=SCHEME_HELP)] = None,
    pause: Annotated[bool | None, typer.Option("--pause/--no-pause", help="IEEE 802.3x PAUSE")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="KEY=VALUE override by dotted name")] = None,
    seeds: Annotated[int | None, typer.Option(help="replications 0..N-1")] = None,
    seed: Annotated[int | None, typer.Option(help="one replication with this seed")] = None,
    duration: Annotated[float | None, typer.Option(help="run length (ms)")] = None,
    fidelity: Annotated[str | None, typer.Option(help=FIDELITY_HELP)] = None,
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
    from .executor import Interrupted, check_backend
    from .runner import run as run_scenario

    backend = check_backend(backend, jobs, address)
    from .executor import Status, show_progress
    from .outdir import RunDir, default_dir

    with Status(show_progress(None) and not as_json, f"reading {scenario}"):
        sc = _scenario(scenario, scheme, pause, set_, seeds, seed, duration, fidelity)
    if pcap:
        sc = sc.replace(
            **{"trace.pcap": [*sc.model.trace.pcap, *(p for p in pcap if p not in sc.model.trace.pcap)]}
        )
    from .guards import check_run_memory
    from .trace import TraceCapWarning, records

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
                while_running=lambda: _while_running(sc, as_json, report),
            )
        except OSError as e:  # a trace file the engine could not write: as any file of --out
            from .outdir import os_cause

            raise ScenarioError(
                f"--out {target}: cannot be written ({os_cause(e)}); nothing was saved"
            ) from None
        except Interrupted as e:
            part = getattr(e, "results", None)
            if part is None:
                rd.abort()
                _fail("interrupted before any seed finished; nothing was saved", 130)
            rd.save(lambda tmp: part.write(tmp, report=False))
            _fail(
                f"interrupted: {len(part.seeds)} of {len(sc.seeds)} seeds finished, saved in {target} "
                "(summary.json: complete = false)",
                130,
            )
        # The summary is rendered while the engine encodes the time series,
        # and printed once the results are in place.
        shown: list[str] = []
        render = None if as_json else lambda: shown.append(_summary_text(sc, res, target, report))
        with Status(show_progress(None) and not as_json, f"writing the results to {target}"):
            rd.save(lambda tmp: res.write(tmp, report=report, while_writing=render))
    except BaseException:
        rd.abort()
        raise
    if as_json:
        print(json.dumps({**res.summary_dict(), "out": str(target)}))
        return
    out.write(shown[0] if shown else _summary_text(sc, res, target, report))
    _print_trace(res, target)
    _warn_untraced(sc, res)


def _summary_text(sc: Any, res: Any, target: Path, report: bool) -> str:
    """What `cnsim run` prints after a run: the metrics table (mean, CI,
    std, min, max over seeds), the transient when there is one, the engine's
    speed and where the results are, rendered for this terminal."""
    summary = res.summary_dict()
    t = Table(
        "metric",
        "mean",
        "95% CI",
        "std",
        "min",
        "max",
        title=f"{sc.name} / {sc.scheme}{' + PAUSE' if sc.pause else ''} / {len(sc.seeds)} seed(s)",
    )
    from .metrics import ci_text

    for k, v in summary["metrics"].items():
        t.add_row(k, fmt(v["mean"]), ci_text(v, fmt), fmt(v["std"]), fmt(v["min"]), fmt(v["max"]))
    lines: list[Any] = [t]
    agg = summary["aggregates"]
    if "transient_ms" in agg:
        rtt = agg["transient_rtt_ms"]
        parts = []
        for name, key in (("transient (knee)", "transient"), ("settling time", "settling")):
            ms = agg.get(f"{key}_ms")
            parts.append(f"{name} " + ("not reached" if ms is None else f"{ms:g} ms = {ms / rtt:.1f} RTTs"))
        lines.append(f"{'; '.join(parts)} (over {len(sc.seeds)} seeds, RTT {rtt:g} ms)")
        if agg.get("transient_rep_median_ms") is not None:
            lines.append(
                f"knee of each seed's own curve: median {agg['transient_rep_median_ms']:g} ms "
                f"(quartiles {agg['transient_rep_q1_ms']:g}-{agg['transient_rep_q3_ms']:g}, "
                f"range {agg['transient_rep_min_ms']:g}-{agg['transient_rep_max_ms']:g})"
            )
    for d in summary.get("deadlocks", []):
        lines.append(f"deadlock, seed {d['seed']}, at {d['at_ms']:g} ms: {d['cycle']}")
    e = summary["engine"]
    lines.append(
        f"engine: {e['frames']:,} frames, {e['events']:,} events, {e['wall_s']:.2f} s, "
        f"{(e['frames_delivered_per_s'] or 0) / 1e6:.2f} M delivered frames/s"
    )
    lines.append(f"results: {target}" + (f"  report: {target / 'report.html'}" if report else ""))
    return out.render(*lines)


def _while_running(sc: Any, as_json: bool, report: bool) -> None:
    """What `cnsim run` prepares while the engine runs (the engine releases
    the GIL): the scenario.toml the results are saved with, the report's
    modules (polars, matplotlib) if it writes one, and, unless the summary is
    printed as JSON, the console that prints it."""
    sc.to_toml()
    import hashlib  # noqa: F401 - the results' SHA-256 (runid.sha256): OpenSSL's library, a few ms to load

    if report:
        import jinja2  # noqa: F401 - loaded now, used after the run
        import polars  # noqa: F401

        from . import report as _report  # noqa: F401

    if not as_json:
        from .console import prepare

        prepare()


def _print_trace(res: Any, target: Path) -> None:
    """Where the event trace and the captures are, and whether a trace hit its row cap."""
    if res.trace is None:
        return
    from .trace import cap_warnings

    t = res.trace.summary()
    if t["events"]:
        rows = sum(t["rows"].values())
        out.print(f"events: {target / t['events']} ({rows:,} rows; cnsim.open_results(DIR).events())")
    if t["pcap"]:
        names = [p.rsplit("/", 1)[-1] for p in t["pcap"]]
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        out.print(f"captures: {target / 'pcap'} ({shown}; open them in Wireshark)")
    for w in cap_warnings(res.trace.per_seed or {}):
        warn(w)


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
        warn(
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
    report: Annotated[bool, typer.Option(help="write the sweep's report.html")] = True,
    point_reports: Annotated[
        bool,
        typer.Option(
            "--point-reports", help="also each point's report.html and plots (a few seconds per point)"
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print what was done as one JSON object")] = False,
) -> None:
    """Run a scenario over the cartesian product of parameter grids x seeds: one results
    directory per point, DIR/sweep.parquet, DIR/report.html; resumable."""
    from .executor import check_backend
    from .scenario import apply_sets
    from .sweeps import parse_grid
    from .sweeps import sweep as sweep_points

    backend = check_backend(backend, jobs, address)
    g = parse_grid(grid or [])
    base = _scenario(scenario, scheme, pause, None, seeds, seed, duration)
    try:
        sc = apply_sets(base, set_ or [], schemes=g.get("scheme", []))
    except ScenarioError as alone:
        if not g:
            raise
        # A --set that only holds with the swept values (topology.variant=B with a grid
        # of B's degrees) is checked at the first point; every point is checked whole.
        try:
            first = base._replace({k: v[0] for k, v in g.items()}, schemes=g.get("scheme", []))
            sc = apply_sets(first, set_ or [], schemes=g.get("scheme", []))
        except ScenarioError:
            raise alone from None
    from .outdir import default_dir
    from .trace import records

    if records(sc):
        warn(
            "trace.events / trace.pcap: a sweep records no event trace or capture; run one point with cnsim run"
        )
    target = out_dir or default_dir(sc.name, "-sweep")

    try:
        with terminate_as_interrupt():  # finished points are on disk; stop the rest cleanly
            res = sweep_points(
                sc,
                g,
                backend=backend,
                out=target,
                jobs=jobs,
                address=address,
                force=force,
                report=report,
                point_reports=point_reports,
                progress=None if not as_json else False,
                outcome=True,
                label="--grid",
            )
    except KeyboardInterrupt:
        kept = target.is_dir() and any(p.name.startswith("p") and p.is_dir() for p in target.iterdir())
        _fail(
            f"interrupted; the finished points are kept in {target}: run the same command again to resume"
            if kept
            else "interrupted before any point finished; nothing was saved",
            130,
        )
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
    from .reopen import rebuild_report
    from .report import write_sweep_report
    from .sweeps import SWEEP_JSON, damaged_points, read_meta, sweep_frame

    if not directory.is_dir():
        raise ScenarioError(f"report: {directory} is not a directory")
    if (directory / SWEEP_JSON).is_file():
        import polars as pl

        from .reopen import check_run

        meta = read_meta(directory)
        damaged = damaged_points(directory, meta)
        for pid in damaged:
            warn(
                f"{directory / pid}/summary.json is missing or damaged; "
                "the point is left out of the report (resuming the sweep redoes it)"
            )
        frame = sweep_frame(directory, meta)
        left_out = []
        for pid in frame["point"].unique(maintain_order=True).to_list() if len(frame) else []:
            problems = check_run(directory / pid).problems
            if problems:
                warn(f"{problems[0]}; the point is left out of the report (cnsim check {directory / pid})")
                left_out.append(pid)
        if left_out:
            frame = frame.filter(~pl.col("point").is_in(left_out))
        path = write_sweep_report(directory, meta, frame)
    else:
        path = rebuild_report(directory)
    out.print(f"report: {path}")


@app.command("check")
def check_cmd(
    directory: Annotated[Path, typer.Argument(help="a run's results directory or a sweep directory")],
) -> None:
    """Check a results directory file by file against its summary.json: what is there, what
    the run wrote (rows, bytes, its identity, the trace and captures) and whether they agree.
    Exit 0 when whole, 2 (one line per problem, naming the file) when not."""
    from .reopen import check

    if not directory.is_dir():
        raise ScenarioError(f"check: {directory} is not a directory")
    checks = check(directory)
    for d in checks:
        out.write(f"{d.path}" + (f": {d.title}" if d.title else "") + "\n")
        width = max((len(f.name) for f in d.files), default=0)
        for f in d.files:
            state = "ok" if f.problem is None else "PROBLEM"
            out.write(f"  {state:<7}  {f.name:<{width}}  summary.json: {f.expected}; found: {f.found}\n")
        for note in d.notes:
            out.write(f"  note: {note}\n")
    problems = [p for d in checks for p in d.problems]
    if problems:
        for p in problems:
            print_error(p)
        raise typer.Exit(2)
    out.write(
        f"check: {directory}: whole ({sum(len(d.files) for d in checks):,} files agree with summary.json)\n"
    )


app.command()(bench)


@app.command()
def validate(
    only: Annotated[
        str | None, typer.Option(help="run one study (hpcc_paper, hours long, runs only when named)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
    jobs: Annotated[int | None, typer.Option(help="parallel replications")] = None,
) -> None:
    """Published figures vs this simulator, side by side; exit 1 if any is out of tolerance."""
    from .executor import check_backend
    from .validate import ON_REQUEST, STUDIES

    check_backend("local", jobs)
    if only is not None and only not in STUDIES:
        raise ScenarioError(f"--only: {only!r} is not a study; studies: {', '.join(STUDIES)}")
    rows = []
    for name, study in STUDIES.items():
        if (only is None and name not in ON_REQUEST) or only == name:
            rows.extend(study(jobs, not as_json and sys.stderr.isatty()))
    bad = [r for r in rows if not r.ok]
    if as_json:
        print(json.dumps({"rows": [r.as_dict() for r in rows], "all_within": not bad}))
    else:
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
                ours = fmt(r.ours) + ("" if r.ci is None else f" [{fmt(r.ci[0])}, {fmt(r.ci[1])}]")
                t.add_row(
                    r.figure,
                    fmt(r.published),
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
        str | None, typer.Option(help=f"a scheme with a fluid model: {_fluid_schemes()}")
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
            t.add_row(row["figure"], fmt(row["fluid"]), fmt(row["packet"]))
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
        c = in_thread(compare, sc, step_us, dest=dest)
        fl = c.fluid
        summary = {"scenario": sc.name, "scheme": sc.scheme, "seeds": list(sc.seeds), **c.as_dict()}
        plot(c, tmp / "fluid.png")
        c.packet.write(tmp / "packet", report=False)
    else:
        fl = in_thread(run, sc, step_us, dest)
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


@app.command("compare-fidelity")
def compare_fidelity(
    scenario: Annotated[str, typer.Argument(help="built-in name or path to a TOML file (with a [workload])")],
    scheme: Annotated[str | None, typer.Option(help=SCHEME_HELP)] = None,
    pause: Annotated[bool | None, typer.Option("--pause/--no-pause", help="IEEE 802.3x PAUSE")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="KEY=VALUE override by dotted name")] = None,
    seeds: Annotated[int | None, typer.Option(help="replications 0..N-1")] = None,
    seed: Annotated[int | None, typer.Option(help="one replication with this seed")] = None,
    duration: Annotated[float | None, typer.Option(help="run length (ms)")] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out", help="also save both runs (packet/, flow/) and fidelity.json in this directory"
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="replace the comparison already in --out")] = False,
    jobs: Annotated[int | None, typer.Option(help="parallel replications (default: all cores)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the comparison as one JSON object")] = False,
) -> None:
    """Run a scenario at both fidelities (the same flows) and give the flow-level model's error:
    p50 / p95 / p99 slowdown per size bucket, and flow by flow."""
    from .fidelity import MIN_FLOWS, TOLERANCE, compare

    sc = _scenario(scenario, scheme, pause, set_, seeds, seed, duration)
    if sc.model.workload is None:
        raise ScenarioError("compare-fidelity: the scenario has no [workload]: there are no flows to compare")
    rd = None
    if out_dir is not None:
        from .outdir import FIDELITY_FILES, RunDir

        rd = RunDir(out_dir, force=force, marker="fidelity.json", allowed=FIDELITY_FILES)
    try:
        c = in_thread(compare, sc, jobs=jobs, progress=None if not as_json else False)
        summary = c.as_dict()
        if rd is not None:
            c.packet.write(rd.tmp / "packet", report=False)
            c.flow.write(rd.tmp / "flow", report=False)
            (rd.tmp / "fidelity.json").write_text(json.dumps(summary, indent=1))
            rd.commit()
    except BaseException:
        if rd is not None:
            rd.abort()
        raise
    if as_json:
        print(json.dumps({**summary, **({"out": str(out_dir)} if out_dir else {})}))
        return
    t = Table(
        "size (bytes)",
        "flows",
        *(f"{q} packet / flow (error)" for q in ("p50", "p95", "p99")),
        "per flow",
        title=f"{sc.name} / {sc.scheme}{' + PAUSE' if sc.pause else ''}: slowdown, packet vs flow-level",
    )
    for b in summary["buckets"]:
        upper = f"{b['upper_bytes']:,}" if b["upper_bytes"] is not None else "-"
        cells = []
        for q in ("p50", "p95", "p99"):
            a, f, e = b[f"packet_{q}"], b[f"flow_{q}"], b[f"error_{q}"]
            cells.append("-" if a is None or f is None else f"{a:.3g} / {f:.3g} ({e:+.0%})")
        med = b["flow_median_error"]
        t.add_row(
            f"{b['lower_bytes']:,}-{upper}",
            f"{b['flows']:,}" + ("" if b["judged"] else " *"),
            *cells,
            "-" if med is None else f"{med:.0%}",
        )
    out.print(t)
    out.print(
        f"p99 within {TOLERANCE:.0%}: {summary['p99_cells_within']} of {summary['p99_cells_judged']} buckets "
        f"with at least {MIN_FLOWS} finished flows (* fewer: shown, not judged); per flow: median "
        "|slowdown_flow / slowdown_packet - 1|"
    )
    sp = summary["speedup"]
    out.print(
        f"wall: packet {summary['packet_wall_s']:.2f} s, flow {summary['flow_wall_s']:.2f} s"
        + (f" ({sp:.0f}x)" if sp else "")
        + (f"; saved in {out_dir}" if out_dir else "")
    )


def _only(args: list[str]) -> typer.Typer:
    """The app, with only the command `args` names when it names one: typer
    builds a click command from every registered function's signature on
    each start (about 1 ms a command), and a run needs one."""
    if args and not args[0].startswith("-"):
        asked = [c for c in app.registered_commands if (c.name or c.callback.__name__) == args[0]]
        if asked:
            app.registered_commands[:] = asked
    return app


def main() -> None:
    """Entry point: maps errors to exit codes, never shows a traceback for bad input."""
    import warnings

    signals.install()
    default_show = warnings.showwarning

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        # A scenario's warning is one `warning:` line, as the CLI's own.
        if issubclass(category, ScenarioWarning):
            warn(str(message))
        else:
            default_show(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        # Not standalone: typer returns the code of a `typer.Exit` (and 130 for Ctrl-C) instead of exiting.
        code = _only(sys.argv[1:])(standalone_mode=False)
        if isinstance(code, int) and code:
            if code == 130:  # Ctrl-C: say what was kept, and do not wait for the engine
                if not _SAID:
                    print_error("interrupted; nothing was saved")
                exit_now(130)
            finish(code)
    except ScenarioError as e:
        print_error(str(e))
        finish(2)
    except typer.Exit as e:
        finish(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        print_error("interrupted; nothing was saved")
        exit_now(130)
    except OSError as e:
        # The machine, not cnsim: a full disk, a file size limit, a name too
        # long, a permission. Results directories are written whole or not at
        # all (cnsim.outdir), so what was being written is not there.
        if os.environ.get("CNSIM_DEBUG"):
            raise
        from .outdir import os_cause

        where = f"{e.filename}: " if e.filename else ""
        print_error(f"{where}{os_cause(e).split(': ', 1)[-1]}; what was being written was not saved")
        finish(2)
    except Exception as e:  # noqa: BLE001
        # Usage errors of typer's click: one line, with where to read more.
        if hasattr(e, "format_message") and isinstance(getattr(e, "exit_code", None), int):
            ctx = getattr(e, "ctx", None)
            where = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
            print_error(f"{e.format_message()}{where}")
            finish(e.exit_code)
        if os.environ.get("CNSIM_DEBUG"):
            raise
        print_error(f"{type(e).__name__}: {e}")
        finish(1)
    finish(0)


if __name__ == "__main__":
    main()
