"""`cnsim bench`: engine speed, one seed on one core: the 1-second 4-to-1
incast of performance.md, a built-in benchmark scenario, or fabrics of 64 to
4096 hosts (cnsim.benchscale)."""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from .console import Table, out
from .errors import ScenarioError
from .signals import in_thread

#: `cnsim bench --workload`: built-in scenarios timed as one seed on one core.
BENCH_SCENARIOS = {
    "singlehop": "singlehop_hotspot",
    "fattree": "fattree_hotspot",
    "multihop": "multihop_hotspot",
}


def bench(
    files: Annotated[
        list[str] | None,
        typer.Argument(help="--whole: scenario files or built-in scenario names", show_default=False),
    ] = None,
    whole: Annotated[
        bool,
        typer.Option(
            "--whole",
            help="time whole `cnsim run FILE --seed 0 --jobs 1 --no-report` processes (start-up, engine, "
            "results) from outside: best and median wall and user time, the engine's share, peak memory, "
            "frames per second (--repeat runs each, default 3)",
        ),
    ] = False,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="--whole: KEY=VALUE override of every run, by dotted name (the UET case: "
            "uet_fattree --set uet.paths=128)",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
    duration_ms: Annotated[
        float | None, typer.Option(help="simulated time (ms; default: the workload's, 1000 for the incast)")
    ] = None,
    workload: Annotated[
        str,
        typer.Option(
            help="incast (performance.md); a built-in benchmark: singlehop, multihop, fattree; or scale "
            "(fat trees of 64 to 4096 hosts, 10 ms at 85% uniform load; or, by --hosts, web-search "
            "leaf-spines of 128 to 65536 hosts, 2 ms; each size in its own process)"
        ),
    ] = "incast",
    hosts: Annotated[
        str | None,
        typer.Option(
            help="scale: fabric sizes, comma-separated: fat trees of 64, 512, 1000, 1024, 4096 (default: "
            "64,512,1024,4096) or web-search leaf-spines of 128, 1536, 6144, 16384, 65536"
        ),
    ] = None,
    scheme: Annotated[
        str | None, typer.Option(help="scheme of a scenario workload (default: the scenario's)")
    ] = None,
    pause: Annotated[
        bool | None, typer.Option("--pause/--no-pause", help="PAUSE for a scenario workload")
    ] = None,
    repeat: Annotated[
        int | None,
        typer.Option(
            help="runs of each workload (scale: of each size, --whole: of each file, taking turns); the "
            "fastest is reported, peak memory is the largest [default: 1; --whole: 3]",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Engine speed, one seed on one core: by default the 1-second 4-to-1 incast of
    performance.md (nocm); `--workload singlehop|multihop|fattree` times a 1 s benchmark scenario;
    `--workload scale` fabrics of 64 to 65,536 hosts; `--whole FILE...` whole `cnsim run` processes."""
    if whole or files:
        if not whole:
            raise ScenarioError(f"{files[0] if files else 'FILE'}: scenario files are timed with --whole")
        if not files:
            raise ScenarioError("--whole: give one or more scenario files or built-in scenario names")
        others = {
            "--workload": workload != "incast",
            "--hosts": hosts,
            "--scheme": scheme,
            "--pause": pause,
            "--duration-ms": duration_ms,
        }
        given = [k for k, v in others.items() if v is not None and v is not False]
        if given:
            raise ScenarioError(f"{given[0]}: not with --whole (a scenario file says what runs)")
        _bench_whole(files, 3 if repeat is None else repeat, as_json, sets or [])
        return
    if sets:
        raise ScenarioError("--set: only with --whole (a built-in benchmark runs as it is)")
    repeat = 1 if repeat is None else repeat
    import cnsim._core as _core

    if duration_ms is not None and not 0 < duration_ms <= 1e9:  # also NaN and inf
        raise ScenarioError(
            f"--duration-ms: {duration_ms} is not allowed; expected a number > 0 and <= 1000000000"
        )
    if not 1 <= repeat <= 100:
        raise ScenarioError(f"--repeat: {repeat} is not allowed; expected an integer from 1 to 100")
    if hosts is not None and workload != "scale":
        raise ScenarioError("--hosts: only the scale workload has fabric sizes")
    if workload == "scale":
        _bench_scale(hosts, duration_ms, scheme, pause, as_json, repeat)
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
            f"--workload: {workload!r} is not allowed; expected incast, "
            + ", ".join(BENCH_SCENARIOS)
            + " or scale"
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
    import cnsim._core as _core

    try:
        sim = _core.Simulation(cfg, 0)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    t0 = time.perf_counter()
    in_thread(sim.run)  # Ctrl-C is seen at once
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


def _bench_whole(files: list[str], repeat: int, as_json: bool, sets: list[str]) -> None:
    from .benchwhole import bench_whole, cnsim_command

    if not 1 <= repeat <= 100:
        raise ScenarioError(f"--repeat: {repeat} is not allowed; expected an integer from 1 to 100")

    def said(f: str, i: int, r: Any) -> None:
        if not as_json:
            out.print(
                f"  {f} run {i + 1}/{repeat}: {r.wall_s:.3f} s wall, {r.user_s:.3f} s user, "
                f"{r.peak_rss_mb:.0f} MB"
            )

    if not as_json:
        given = "".join(f" --set {s}" for s in sets)
        out.print(
            f"timing {' '.join(cnsim_command())} run FILE --seed 0 --jobs 1 --no-report{given}, "
            f"{repeat} run(s) each"
        )
    figs = in_thread(bench_whole, files, repeat, said, sets)
    if as_json:
        print(
            json.dumps(
                {"workload": "whole", "runs": repeat, "sets": sets, "files": [f.to_dict() for f in figs]}
            )
        )
        return
    t = Table(
        "scenario",
        "wall best / median",
        "user best / median",
        "engine (share)",
        "peak RSS",
        "frames/s whole (engine)",
        title=f"cnsim bench --whole, {repeat} run(s) each",
    )
    for f in figs:
        t.add_row(
            Path(f.scenario).name,
            f"{f.wall_best_s:.3f} / {f.wall_median_s:.3f} s",
            f"{f.user_best_s:.3f} / {f.user_median_s:.3f} s",
            f"{f.engine_best_s:.3f} s ({f.engine_share:.0%})",
            f"{f.peak_rss_mb:.0f} MB",
            f"{f.frames_per_s_whole / 1e6:.2f} M ({f.frames_per_s_engine / 1e6:.2f} M)",
        )
    out.print(t)


def _bench_scale(
    hosts: str | None,
    ms: float | None,
    scheme: str | None,
    pause: bool | None,
    as_json: bool,
    repeat: int = 1,
) -> None:
    from .benchscale import DEFAULT_HOSTS, DEFAULT_MS, best_of, family, run_sizes

    try:
        sizes = [int(h) for h in hosts.split(",")] if hosts else list(DEFAULT_HOSTS)
    except ValueError:
        raise ScenarioError(
            f"--hosts: {hosts!r} is not allowed; expected sizes such as 64,512,4096"
        ) from None
    kind = family(sizes)  # refused before anything is said to run
    if ms is None:
        ms = DEFAULT_MS[kind]
    rounds = []
    for _ in range(repeat):
        if as_json:
            rounds.append(in_thread(run_sizes, sizes, ms, scheme, pause))
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
    load = "85% uniform load" if kind == "fattree" else "web-search flows at 50% load"
    t = Table(
        "hosts",
        "fabric",
        "build",
        "events/s",
        f"vs {smallest:,} hosts",
        "events/frame",
        "delivered frames/s",
        "engine wall",
        "wall with results",
        "peak memory",
        title=f"cnsim bench: scale, {rows[0]['scheme']}, {ms:g} simulated ms, {load}, seed 0"
        + (f", best of {repeat}" if repeat > 1 else ""),
    )
    for f in rows:
        t.add_row(
            f"{f['hosts']:,}",
            f["fabric"],
            f"{f['build_s']:.2f} s",
            f"{f['events_per_s'] / 1e6:.2f} M",
            f"{f['events_per_s_vs_smallest']:.0%}",
            f"{f['events_per_frame']:.1f}",
            f"{f['frames_delivered_per_s'] / 1e6:.2f} M",
            f"{f['engine_wall_s']:.2f} s",
            f"{f['wall_s_with_results']:.2f} s",
            f"{f['peak_rss_mb']:.0f} MB",
        )
    out.print(t)


def _scale_progress(sizes: list[int], ms: float, scheme: str | None, pause: bool | None) -> Any:
    """Each size in turn, saying which one runs (they take seconds to minutes)."""
    from .benchscale import run_sizes

    for h in sizes:
        from rich.console import Console

        Console(stderr=True, markup=False).print(f"running the {h:,}-host fabric ...")
        yield from in_thread(run_sizes, [h], ms, scheme, pause)


def _core_version() -> str:
    import cnsim._core as _core

    return _core.version()
