"""Property-based tests of scenario validation (hypothesis): whatever value
any declared parameter is given, the scenario is either accepted, and then
the engine accepts its config too, or refused with one ScenarioError line
that names the parameter; never another exception, never a crash."""

from __future__ import annotations

import math

import cnsim
import pytest
from cnsim.scenario import model as M
from cnsim.schemes import SCHEMES, TABLES
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

BASE = cnsim.load("baseline", seeds=[0])


#: Every declared parameter of the sections a file may hold: (dotted key, section model field).
SECTIONS = {
    "defaults": M.Defaults,
    "bridge": M.BridgeDefaults,
    "station": M.StationDefaults,
    "pause": M.Pause,
    "measure": M.Measure,
    "transient": M.Transient,
    **TABLES,
}
KEYS = sorted(f"{s}.{f.alias or n}" for s, model in SECTIONS.items() for n, f in model.model_fields.items())

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


def _check_refusal(e: cnsim.ScenarioError, key: str) -> None:
    msg = str(e)
    assert "\n" not in msg and msg, msg
    section, _, name = key.partition(".")
    # The message names the parameter set, or the rule or window it broke.
    assert msg.startswith((key, section, "measure", "pause", "transient", "windows")), msg


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(KEYS), value=values, scheme=st.sampled_from(sorted(SCHEMES)))
@example(key="defaults.link_rate_gbps", value=1e300, scheme="bcn")
@example(key="station.processing_us", value=1e30, scheme="bcn")
@example(key="station.nic_buffer_bytes", value=2**70, scheme="bcn")
@example(key="bcn.drift_interval_us", value=1e-9, scheme="bcn")
@example(key="qcn.fr_thr", value=2**40, scheme="qcn")
@example(key="dcqcn.timer_us", value=1e300, scheme="dcqcn")
def test_any_value_is_accepted_or_refused_in_one_line(key, value, scheme):
    try:
        sc = BASE.replace(scheme=scheme, **{key: value})
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
@given(key=st.sampled_from(KEYS), value=values, scheme=st.sampled_from(sorted(SCHEMES)))
@example(key="qcn2pt.min_rate_mbps", value=1e300, scheme="qcn2pt")
@example(key="bcn.tmax_us", value=1e12, scheme="bcn00")
@example(key="dcqcn.timer_us", value=1e-6, scheme="dcqcn")
def test_an_accepted_scenario_runs(key, value, scheme):
    # What validation lets through, the engine runs: no panic, no overflow,
    # frames conserved (the engine checks it on every run).
    try:
        sc = BASE.replace(scheme=scheme, duration_ms=3.0, **{key: value})
        sc.engine_json()
    except cnsim.ScenarioError:
        return
    res = cnsim.run(sc, progress=False)
    assert res.runs[0].frames["generated"] >= res.runs[0].frames["delivered"]
