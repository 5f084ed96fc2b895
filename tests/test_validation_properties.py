"""Property-based tests of scenario validation (hypothesis): whatever value
any declared parameter is given, under any registered scheme (the engine's
registry, transport schemes included) and with open-loop sources or
transport flows (baseline, flows_incast), the scenario is either accepted,
and then the engine accepts its config too, or refused with one
ScenarioError line that names the parameter; never another exception, never
a crash."""

from __future__ import annotations

import math

import cnsim
import pytest
from cnsim.scenario import model as M
from cnsim.schemes import SCHEMES, TABLES
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

BASE = cnsim.load("baseline", seeds=[0])
#: Open-loop sources, and transport flows (a [workload]).
BASES = {"baseline": BASE, "flows_incast": cnsim.load("flows_incast", seeds=[0])}
#: Per parameter table, the schemes that read it (bcn: bcn, bcn00, bcnmax).
READERS = {t: sorted(n for n, (tt, _) in SCHEMES.items() if tt == t) for t in TABLES}


#: Every declared parameter of the sections a file may hold: (dotted key, section model field).
SECTIONS = {
    "defaults": M.Defaults,
    "bridge": M.BridgeDefaults,
    "station": M.StationDefaults,
    "pause": M.Pause,
    "measure": M.Measure,
    "transient": M.Transient,
    "workload": M.Workload,
    **TABLES,
}
KEYS = sorted(f"{s}.{n}" for s, model in SECTIONS.items() for n in model.names)

values = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**32, 2**63, 2**64, 1e-9, 1e9, 1e12, 1e300, -0.0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=8),
    st.sampled_from(["flow", "cp", "bytes", "table", "standard", "auto", "per_input", "defer"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, str]:
    """(base scenario, key, scheme): a scheme table's key under a scheme that
    reads it (another is refused, test below), any other key under any
    registered scheme; workload keys on the scenario with a workload."""
    key = draw(st.sampled_from(KEYS))
    table = key.partition(".")[0]
    scheme = draw(st.sampled_from(READERS.get(table) or sorted(SCHEMES)))
    base = draw(st.sampled_from(["flows_incast"] if table == "workload" else sorted(BASES)))
    return base, key, scheme


def test_the_cases_reach_every_registered_scheme_and_both_kinds_of_traffic():
    from hypothesis import find

    for scheme in SCHEMES:
        find(cases(), lambda c, s=scheme: c[2] == s)
    for base in BASES:
        find(cases(), lambda c, b=base: c[0] == b and c[1].startswith(("workload", "hpcc")))


def _both(raw: dict, cfg: dict) -> tuple[str | None, str | None]:
    """The refusal (None: accepted) of the scenario `raw` checked as every
    scenario is, and of the engine `cfg` given straight to the engine."""
    from cnsim import _core

    try:
        cnsim.Scenario(raw, seeds=[0]).engine_config_checked()
        python = None
    except cnsim.ScenarioError as e:
        python = str(e)
    try:
        _core.check_config(cfg)
        engine = None
    except ValueError as e:
        engine = str(e)
    return python, engine


def _check_refusal(e: cnsim.ScenarioError, key: str) -> None:
    msg = str(e)
    assert "\n" not in msg and msg, msg
    section, _, name = key.partition(".")
    # The message names the parameter set, or the rule or window it broke
    # (a scheme's rate floor against the line rate names the scheme's key:
    # defaults.link_rate_gbps = 1e-9 under bcn, 'bcn.min_rate_mbps: ...').
    assert msg.startswith((key, section, "measure", "pause", "transient", "windows", *TABLES)), msg


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), value=values)
@example(case=("baseline", "defaults.link_rate_gbps", "bcn"), value=1e300)
@example(case=("baseline", "station.processing_us", "bcn"), value=1e30)
@example(case=("baseline", "station.nic_buffer_bytes", "bcn"), value=2**70)
@example(case=("baseline", "bcn.drift_interval_us", "bcn"), value=1e-9)
@example(case=("baseline", "qcn.fr_thr", "qcn"), value=2**40)
@example(case=("baseline", "dcqcn.timer_us", "dcqcn"), value=1e300)
@example(case=("flows_incast", "hpcc.eta", "hpcc"), value=1e-300)
def test_any_value_is_accepted_or_refused_in_one_line(case, value):
    base, key, scheme = case
    try:
        sc = BASES[base].replace(scheme=scheme, **{key: value})
        if key.startswith("workload."):
            # Validated, not resolved: resolving generates the flows, and an
            # accepted extreme value (a period of 1e-300 us) makes that list
            # without bound before anything refuses it (input guards: issue 28).
            return
        text = sc.engine_json()  # the engine's own checks (cross-parameter rules)
    except cnsim.ScenarioError as e:
        _check_refusal(e, key)
        return
    assert text  # accepted: the engine config was built and checked
    section, _, name = key.partition(".")
    table = getattr(sc.model, section)
    got = getattr(table, name, None) if table is not None else None
    if isinstance(got, float):
        assert math.isfinite(got), f"{key} accepted a non-finite number"


@settings(max_examples=100, deadline=None)
@given(
    pmin=st.floats(min_value=1e-6, max_value=1.0),
    pmax=st.floats(min_value=1e-6, max_value=1.0),
)
def test_a_cross_parameter_rule_holds_exactly_when_accepted(pmin, pmax):
    sc = cnsim.load("singlehop_hotspot", scheme="qcn2pt", seeds=[0])
    try:
        sc.replace(**{"qcn2pt.pmin": pmin, "qcn2pt.pmax": pmax}).engine_json()
    except cnsim.ScenarioError as e:
        assert pmin > pmax
        assert str(e).startswith("qcn2pt.pmin / qcn2pt.pmax: "), e
    else:
        assert pmin <= pmax


_LINK = BASE.model.links[-1]


@pytest.mark.parametrize(
    "key", ["nodes.S1.load", f"links.{_LINK.a}-{_LINK.b}.rate_gbps", "nodes.B5.buffer_bytes"]
)
@settings(max_examples=40, deadline=None)
@given(value=values)
def test_node_and_link_values_are_accepted_or_refused_in_one_line(key, value):
    try:
        BASE.replace(**{key: value}).engine_json()
    except cnsim.ScenarioError as e:
        msg = str(e)
        assert "\n" not in msg and msg.startswith(key.rsplit(".", 1)[0]), msg


@settings(max_examples=60, deadline=None)
@given(value=values)
def test_any_seeds_and_bin_width_are_accepted_or_refused_in_one_line(value):
    for key in ("seeds", "bin_us", "duration_ms"):
        try:
            BASE.replace(**{key: value}).engine_json()
        except cnsim.ScenarioError as e:
            assert "\n" not in str(e) and key in str(e).split(":")[0], e


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), value=values)
@example(case=("baseline", "qcn2pt.min_rate_mbps", "qcn2pt"), value=1e300)
@example(case=("baseline", "bcn.tmax_us", "bcn00"), value=1e12)
@example(case=("baseline", "dcqcn.timer_us", "dcqcn"), value=1e-6)
@example(case=("flows_incast", "swift.base_target_us", "swift"), value=1e-6)
def test_an_accepted_scenario_runs(case, value):
    # What validation lets through, the engine runs: no panic, no overflow,
    # frames conserved (the engine checks it on every run). Workload values
    # are only validated here, not run: an accepted extreme one (a load or a
    # period that starts flows without bound) can take the machine's memory
    # before the engine refuses it (input guards: issue 28).
    base, key, scheme = case
    assume(not key.startswith("workload."))
    try:
        sc = BASES[base].replace(scheme=scheme, duration_ms=3.0, **{key: value})
        sc.engine_json()
    except cnsim.ScenarioError:
        return
    res = cnsim.run(sc, progress=False)
    assert res.runs[0].frames["generated"] >= res.runs[0].frames["delivered"]


@settings(max_examples=200, deadline=None)
@given(
    key=st.sampled_from([k for k in KEYS if k.partition(".")[0] in TABLES]),
    scheme=st.sampled_from(sorted(SCHEMES)),
    value=values,
)
def test_a_key_of_a_scheme_that_does_not_run_is_refused_by_name(key, scheme, value):
    table = key.partition(".")[0]
    try:
        BASE.replace(scheme=scheme, **{key: value})
    except cnsim.ScenarioError as e:
        if scheme not in READERS[table]:
            assert str(e).startswith(
                f"{key}: a parameter of {', '.join(READERS[table])}, but the scheme that runs is {scheme}"
            ), e
        return
    assert scheme in READERS[table]


# ------------------------------------------------ one validator: Python and the engine agree

_PAUSE_VALUES = st.one_of(
    st.integers(min_value=-2, max_value=2**41),
    # Not an integral float (2.0): Python reads it as the integer declared
    # (cnsim.parameters), an engine config must hold integers typed (serde): the one
    # difference left, in what a hand-written engine config may hold.
    st.sampled_from([0, 1, 65535, 65536, 2**40, 2**40 + 1, 2**64, 1.5, True, "auto", "ingress", "x"]),
)


@settings(max_examples=300, deadline=None)
@given(
    pause=st.fixed_dictionaries(
        {},
        optional={
            "enabled": st.one_of(st.booleans(), st.sampled_from([0, 1])),
            "xoff_bytes": _PAUSE_VALUES,
            "xon_bytes": _PAUSE_VALUES,
            "quanta": _PAUSE_VALUES,
            "trigger": st.sampled_from(["auto", "output_queue", "ingress", "partition", "sometimes", 1]),
        },
    ),
    frame_bytes=st.one_of(st.none(), st.integers(min_value=0, max_value=70_000)),
)
def test_python_and_the_engine_agree_on_the_declared_sections(pause, frame_bytes):
    """The same [pause] / [defaults] values, given to Python (the generated
    models, then the engine's check as every scenario does) and straight to
    the engine (its config, no Python validation): both accept or both
    refuse, naming the same section."""
    from cnsim import _core

    raw = BASE.raw | {"pause": pause}
    if frame_bytes is not None:
        raw["defaults"] = {**BASE.raw.get("defaults", {}), "frame_bytes": frame_bytes}
    try:
        cnsim.Scenario(raw, seeds=[0]).engine_config_checked()
        python = None
    except cnsim.ScenarioError as e:
        python = str(e)
    cfg = BASE.engine_config_checked() | {"pause": BASE.engine_config_checked()["pause"] | pause}
    if frame_bytes is not None:
        cfg["frame_bytes"] = frame_bytes
    try:
        _core.check_config(cfg)
        engine = None
    except ValueError as e:
        engine = str(e)
    assert (python is None) == (engine is None), (python, engine)
    if python is not None:
        assert python.partition(".")[0] in ("pause", "defaults"), python
        assert engine.partition(".")[0] in (
            "pause",
            "defaults",
            "frame_bytes",
            "quanta",
            "xoff_bytes",
            "xon_bytes",
            "enabled",
            "trigger",
        ), engine


@settings(max_examples=200, deadline=None)
@given(
    at_ps=st.one_of(
        st.integers(min_value=-2, max_value=2**64 - 1), st.sampled_from([0, 10**18, 10**18 + 10**9])
    ),
    rate_bps=st.one_of(
        st.integers(min_value=-2, max_value=2**64 - 1), st.sampled_from([0, 1, 10**15, 10**15 + 10**6])
    ),
    action=st.sampled_from(["link_rate", "stop"]),
)
def test_python_and_the_engine_agree_on_an_event(at_ps, rate_bps, action):
    """An event given to the scenario (as written, in ms and Gbit/s) and
    straight to the engine config (ps, bit/s: whole units, so the two say
    the same): both accept or both refuse, naming an event."""

    a, b = _LINK.a, _LINK.b
    station = next(n.name for n in BASE.model.nodes if n.kind == "station")
    if action == "link_rate":
        written = {"at_ms": at_ps / 1e9, "action": action, "from": a, "to": b, "rate_gbps": rate_bps / 1e9}
        engine = {"at_ps": at_ps, "action": action, "from": a, "to": b, "rate_bps": rate_bps}
    else:
        written = {"at_ms": at_ps / 1e9, "action": action, "node": station}
        engine = {"at_ps": at_ps, "action": action, "node": station}
    cfg = BASE.engine_config_checked()
    cfg = cfg | {"events": [*cfg["events"], engine]}
    python, refused = _both(BASE.raw | {"events": [written]}, cfg)
    assert (python is None) == (refused is None), (python, refused)
    if python is not None:
        assert python.startswith("events[0]."), python
        assert refused.startswith("events"), refused


@settings(max_examples=100, deadline=None)
@given(
    ack_every=st.integers(min_value=-1, max_value=70_000),
    rto_ps=st.one_of(
        st.integers(min_value=-1, max_value=2**64 - 1),
        st.sampled_from([0, 999_999, 10**6, 10**18, 10**18 + 10**7]),
    ),
)
def test_python_and_the_engine_agree_on_the_transport(ack_every, rto_ps):
    """`workload.ack_every` / `rto_us` given to the scenario and the same
    values straight to the engine config's transport (ps): both accept or
    both refuse (one declaration, sections::workload)."""

    flows = BASES["flows_incast"]
    workload = {**flows.raw["workload"], "ack_every": ack_every, "rto_us": rto_ps / 1e6}
    cfg = flows.engine_config_checked()
    cfg = cfg | {"transport": cfg["transport"] | {"ack_every": ack_every, "rto_ps": rto_ps}}
    python, refused = _both(flows.raw | {"workload": workload}, cfg)
    assert (python is None) == (refused is None), (python, refused)
    if python is not None:
        assert python.startswith("workload."), python
        assert refused.startswith("transport"), refused


@settings(max_examples=100, deadline=None)
@given(
    load=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([0.0, 1.0, -0.0, 1.0000001])
    )
)
def test_python_and_the_engine_agree_on_a_nodes_load(load):
    """A station's load given to the scenario and straight to the engine
    config: both accept or both refuse, naming `nodes.S1.load` (finite
    numbers: an engine config cannot hold inf or nan, which JSON lacks)."""
    from cnsim import _core

    try:
        BASE.replace(**{"nodes.S1.load": load}).engine_config_checked()
        python = None
    except cnsim.ScenarioError as e:
        python = str(e)
    cfg = BASE.engine_config_checked()
    stations = [s | {"load": load} if s["name"] == "S1" else s for s in cfg["stations"]]
    try:
        _core.check_config(cfg | {"stations": stations})
        refused = None
    except ValueError as e:
        refused = str(e)
    assert (python is None) == (refused is None), (python, refused)
    if python is not None:
        assert python.startswith("nodes.S1.load") and refused.startswith("nodes.S1.load"), (python, refused)
