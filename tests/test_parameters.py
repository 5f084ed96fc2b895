"""`cnsim.parameters`: declared tables read without pydantic. Values are taken
as written (no number from a string, no switch from 1 or 0, never true as a
number; an integer may be written 5.0), checked against the declared type
and range, held as the declared type, and every refusal is one line naming
the parameter. (Before pydantic was dropped, these readings were checked
against the pydantic models built from the same declarations: 5,695
boundary values of every declared table and 2,935 fuzzed scenarios, 1,579
of them accepted, read alike; messages differed only where pydantic's own
words had leaked, `Input should be a valid integer`.)"""

from __future__ import annotations

import math
from typing import Any

import pytest
from cnsim import parameters
from cnsim.declarations import declarations
from hypothesis import given, settings
from hypothesis import strategies as st

#: Every declared table but the top level's (table "": its keys are read by
#: the scenario's reader, named alone, with seeds by its own reader).
TABLES = [t for t in [*declarations()["sections"], *declarations()["tables"]] if t["name"]]
#: Kinds the engine declares but only a Python reader reads (a node's dest, a
#: workload's cdf, ...: params::Kind::Opaque), tested with their readers.
OPAQUE = {"dest", "cdf", "weights_or_name", "phases"}
IDS = [t["name"] for t in TABLES]

ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["auto", "flow", "cp", "per_output", "shared", "bytes", "standard", "original"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _valid(p: dict[str, Any]) -> Any:
    """A value the declaration allows (its range's lower end, or above it)."""
    if p["type"] == "str":
        return "x"
    if p["type"] == "choice":
        return p["choices"][0]
    if p["type"] == "phases":  # a job's phases: one, read by the scenario's reader
        import cnsim.scenario.model  # noqa: F401 - registers the reader

        return [{"collective": "allreduce", "size_bytes": 1}]
    lo = p["min"]
    return 1.0 if lo is None else lo["value"] + (0 if lo["inclusive"] else 1)


def _required(t: dict[str, Any]) -> dict[str, Any]:
    return {p["name"]: _valid(p) for p in t["params"] if p.get("required")}


def _allowed(p: dict[str, Any], v: Any) -> bool:
    """What the declaration allows, written independently of `parameters`."""
    t = p["type"]
    if v is None:
        return p.get("unset") is not None
    if t in ("float", "int"):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return False
        if t == "int" and not float(v).is_integer():
            return False
        lo, hi = p["min"], p["max"]
        return (lo is None or v > lo["value"] or (lo["inclusive"] and v == lo["value"])) and (
            hi is None or v < hi["value"] or (hi["inclusive"] and v == hi["value"])
        )
    if t == "bool":
        return isinstance(v, bool)
    if t == "choice":
        return isinstance(v, str) and v in p["choices"]
    if t == "flag_or":
        return isinstance(v, bool) or (isinstance(v, str) and v in p["choices"])
    if t == "int_or":
        return (isinstance(v, str) and v in p["choices"]) or (
            not isinstance(v, str) and _allowed({**p, "type": "int"}, v)
        )
    if t == "str":
        return isinstance(v, str) and not (p.get("nonempty") and v == "")
    if t in ("strs", "choices"):
        words = p["choices"] if t == "choices" else None
        return isinstance(v, list) and all(isinstance(x, str) and (words is None or x in words) for x in v)
    if t == "ints":
        element = {**p, "type": "int"}
        n = p.get("length")
        return isinstance(v, list) and (not n or len(v) == n) and all(_allowed(element, x) for x in v)
    raise AssertionError(t)


def _check(t: dict[str, Any], name: str, v: Any) -> None:
    p = next(q for q in t["params"] if q["name"] == name)
    rec = parameters.record(t)
    given_ = _required(t) | {name: v}
    try:
        got = rec.check(given_, t["name"])
    except parameters.TableError as e:
        assert not _allowed(p, v), (name, v, str(e))
        line = str(e)
        assert line.startswith((f"{t['name']}.{name}: ", f"{t['name']}.{name}[")) and "\n" not in line, line
        if v is not None and not isinstance(v, dict | list):
            assert f": {parameters.shown(v)} is not allowed; expected " in line, line
        if isinstance(v, list) and p["type"] in ("strs", "choices", "ints"):  # the element at fault is named
            assert line.startswith(f"{t['name']}.{name}[") or "expected an array" in line, line
        return
    assert _allowed(p, v), (name, v, got[name])
    held = got[name]
    if v is not None and p["type"] in ("float", "int"):
        # A number parameter holds the nearest 64-bit float, as TOML and the engine's
        # JSON read it (an integer beyond 2**53 given for one is rounded: 2**53 + 1 -> 2**53).
        assert type(held) is (float if p["type"] == "float" else int)
        assert held == (float(v) if p["type"] == "float" else v)


def _values(p: dict[str, Any]) -> list[Any]:
    vs: list[Any] = [
        p["default"],
        None,
        True,
        "5",
        5.0,
        5.5,
        2**40,
        float("nan"),
        float("inf"),
        [1],
        {"a": 1},
    ]
    for side in ("min", "max"):
        b = p[side]
        if b:
            vs += [b["value"] + dv for dv in (-1, -1e-9, 0, 1e-9, 1)]
    if p["type"] == "ints":
        n = p.get("length") or 2
        vs += [[0] * n, [7] * n, [8] * n, [-1] * n, [1] * (n + 1), [1.5] * n, [True] * n, ["1"] * n]
    return vs + list(p["choices"] or []) + ["nosuch"]


@pytest.mark.parametrize("t", TABLES, ids=IDS)
def test_every_declared_value_is_read_as_its_declaration_allows(t):
    for p in t["params"]:
        if not p["fixed"] and p["type"] not in OPAQUE:
            for v in _values(p):
                _check(t, p["name"], v)
    with pytest.raises(parameters.TableError, match=rf"^{t['name']}\.nosuch: unknown parameter; known: "):
        parameters.record(t).check(_required(t) | {"nosuch": 1}, t["name"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(TABLES))), st.data(), ANY_VALUE)
def test_any_value_of_any_parameter_is_read_as_declared(i, data, value):
    t = TABLES[i]
    p = data.draw(st.sampled_from([q for q in t["params"] if not q["fixed"] and q["type"] not in OPAQUE]))
    _check(t, p["name"], value)


def test_an_integer_a_float_cannot_hold_exactly_is_read_as_the_nearest_float():
    # Found by hypothesis: ecm.qeq_pages = 2**53 + 1 is held as 2**53 (float), as TOML reads it.
    t = TABLES[IDS.index("ecm")]
    _check(t, "qeq_pages", 2**53 + 1)
    assert parameters.record(t).check(_required(t) | {"qeq_pages": 2**53 + 1}, "ecm")["qeq_pages"] == 2.0**53


def test_a_record_checks_what_is_set_and_says_what_was_given():
    pause = parameters.record(next(t for t in declarations()["sections"] if t["name"] == "pause"))
    r = pause(xoff_bytes=100_000, xon_bytes=50_000.0)
    assert (r.xoff_bytes, r.xon_bytes, r.enabled) == (100_000, 50_000, False)
    assert type(r.xon_bytes) is int and r.fields_set == {"xoff_bytes", "xon_bytes"}
    r.enabled = True
    assert r.enabled is True
    with pytest.raises(
        parameters.TableError, match=r"^pause\.enabled: 1 is not allowed; expected true or false$"
    ):
        r.enabled = 1
    with pytest.raises(AttributeError, match="no parameter 'nosuch'"):
        r.nosuch = 1
    with pytest.raises(
        parameters.TableError,
        match=r"^pause\.quanta: 0 is not allowed; expected an integer >= 1 and <= 65535$",
    ):
        pause(quanta=0)
    # An engine limit is named only when crossed.
    with pytest.raises(
        parameters.TableError, match=r"^pause\.xoff_bytes: -1 is not allowed; expected an integer >= 0$"
    ):
        pause(xoff_bytes=-1)
    with pytest.raises(parameters.TableError, match=r"expected an integer <= 1099511627776$"):
        pause(xoff_bytes=2**41)
