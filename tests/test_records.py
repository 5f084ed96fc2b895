"""`cnsim.records` (declared tables checked without pydantic) reads every
declared table as the pydantic models built from the same declarations do:
the same values accepted, held as the same values of the same types, the
same ones refused, each refusal one line naming the parameter. Messages may
differ only where pydantic's own words leaked through (`Input should be a
valid integer`, a choice refused as "expected a number")."""

from __future__ import annotations

import math
from typing import Any

import pytest
from cnsim import declared, records
from cnsim.declarations import declarations
from cnsim.scenario.messages import one_line
from cnsim.scenario.model import _Model
from cnsim.schemes import _Table
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

TABLES = [(t, _Model) for t in declarations()["sections"]] + [(t, _Table) for t in declarations()["tables"]]
IDS = [t["name"] for t, _ in TABLES]

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


def _values(p: dict[str, Any]) -> list[Any]:
    """Values around the parameter's range ends, its words and its default."""
    vs: list[Any] = [p["default"], 5.0, 5.5, 2**40, 2**40 + 1]
    for side in ("min", "max"):
        b = p[side]
        if b:
            vs += [b["value"] + dv for dv in (-1, -1e-9, 0, 1e-9, 1)]
    return vs + list(p["choices"] or [])


def _pydantic(model: Any, t: dict[str, Any], given: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", model.model_validate(given).model_dump()
    except ValidationError as e:
        return "err", one_line(e, given, root=model, prefix=t["name"])


def _records(rec: type[records.Record], t: dict[str, Any], given: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", rec.check(given, t["name"])
    except records.TableError as e:
        return "err", str(e)


def _same(t: dict[str, Any], model: Any, rec: type[records.Record], one: dict[str, Any]) -> None:
    # The table's required parameters given (a window's ends), then the one under test.
    given = {p["name"]: float(i) for i, p in enumerate(t["params"]) if p.get("required")} | one
    a, b = _pydantic(model, t, given), _records(rec, t, given)
    assert a[0] == b[0], (given, a, b)
    if a[0] == "ok":
        for k, v in a[1].items():
            w = b[1][k]
            assert type(v) is type(w) and (v == w or (isinstance(v, float) and math.isnan(v))), (k, v, w)
        return
    name = next(iter(one))
    assert b[1].startswith(f"{t['name']}.{name}: ") and "\n" not in b[1], b[1]
    helps = [p["help"] for p in t["params"]]
    leaked = any(w in a[1] for w in ("Input should", "not true or false", *helps))
    if not leaked and not a[1].endswith("expected a number"):
        # pydantic's reading in our words: the same words, or ours name the range instead of the help
        assert b[1] == a[1] or "is not allowed; expected an integer" in b[1], (a[1], b[1])


@pytest.mark.parametrize(("t", "base"), TABLES, ids=IDS)
def test_every_declared_table_reads_the_same_as_its_pydantic_model(t, base):
    model, rec = declared.model(t, base), records.record(t)
    params = [p for p in t["params"] if not p["fixed"]]
    for p in params:
        for v in _values(p):
            _same(t, model, rec, {p["name"]: v})
    _same(t, model, rec, {"nosuch": 1})
    if not any(p.get("required") for p in params):
        r = rec()
        assert r.dump() == model().model_dump() and r.fields_set == frozenset()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(TABLES))), st.data(), ANY_VALUE)
def test_any_value_of_any_parameter_reads_the_same(i, data, value):
    t, base = TABLES[i]
    params = [p for p in t["params"] if not p["fixed"]]
    p = data.draw(st.sampled_from(params))
    _same(t, declared.model(t, base), records.record(t), {p["name"]: value})


def test_a_record_is_read_only_and_says_what_was_set():
    pause = records.record(next(t for t in declarations()["sections"] if t["name"] == "pause"))
    r = pause(xoff_bytes=100_000, xon_bytes=50_000.0)
    assert (r.xoff_bytes, r.xon_bytes, r.enabled) == (100_000, 50_000, False)
    assert type(r.xon_bytes) is int and r.fields_set == {"xoff_bytes", "xon_bytes"}
    with pytest.raises(AttributeError, match="read-only"):
        r.enabled = True
    with pytest.raises(
        records.TableError, match=r"^pause\.quanta: 0 is not allowed; expected an integer >= 1 and <= 65535$"
    ):
        pause(quanta=0)
