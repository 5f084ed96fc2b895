"""Declared tables checked and held without pydantic: the Python reading of
the engine's parameter declarations (`declarations.json`, the same
declaration `crates/cnsim-core/src/params.rs` checks with `Table::check`).

A table's values are checked as written (a number is never read from a
string, a switch never from 1 or 0, `true` is never a number; an integer
may be written 5.0, as TOML users do) against the declared type and range,
and held by a record class made once per table: attribute access, the keys
the user set, and the table as a dict. Errors are one line naming the
parameter as the user wrote it (`pause.xoff_bytes: -5 is not allowed;
expected an integer >= 0`), in the words of the scenario's other messages.

Why not pydantic: building a pydantic model class for every declared table
on every start cost more than the simulation of a small run (issue 30), and
every message had to be translated back from pydantic's error records. The
rules that tie parameters together stay the engine's (the scenario asks it
before anything runs)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from .declarations import limits, quantity_of, unit_of

#: Upper limits set by the engine's integer units (declared once, in the
#: engine: `params::limits`): named in a message only when crossed, so that
#: a negative size hears ">= 0", not ">= 0 and <= 1099511627776".
ENGINE_LIMITS = tuple(
    float(v) for k, v in limits().items() if k in ("max_ms", "max_us", "max_gbps", "max_bytes", "max_u32")
)

_OPS = {("min", True): ">=", ("min", False): ">", ("max", True): "<=", ("max", False): "<"}


class TableError(ValueError):
    """A value of a declared table refused: `where` names the parameter,
    `line` is the whole message."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where = where


def _num(v: float) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def shown(v: Any) -> str:
    """A value as the user wrote it, for a message."""
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict | list):
        from .scenario.toml_text import _toml_value

        return _toml_value(v)
    return str(v)


def _range(p: Mapping[str, Any], crossed_upper: bool) -> str:
    """The allowed range in words; an engine limit only when crossed."""
    lo, hi = p["min"], p["max"]
    engine_hi = hi is not None and hi["value"] in ENGINE_LIMITS
    parts = []
    if lo is not None and not (crossed_upper and engine_hi):
        parts.append(f"{_OPS['min', lo['inclusive']]} {_num(lo['value'])}")
    if hi is not None and (crossed_upper or not engine_hi):
        parts.append(f"{_OPS['max', hi['inclusive']]} {_num(hi['value'])}")
    return " and ".join(parts)


def _in_range(p: Mapping[str, Any], v: float) -> tuple[bool, bool]:
    """(within the range, above its upper end)."""
    lo, hi = p["min"], p["max"]
    if lo is not None and (v < lo["value"] or (v == lo["value"] and not lo["inclusive"])):
        return False, False
    if hi is not None and (v > hi["value"] or (v == hi["value"] and not hi["inclusive"])):
        return False, True
    return True, False


def _words(ws: list[str]) -> str:
    quoted = [repr(w) for w in ws]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def check_value(p: Mapping[str, Any], v: Any, optional: bool = False) -> tuple[Any, str | None]:
    """(the value as held, None) or (None, what is expected, in words), for
    a scalar kind."""
    t = p["type"]
    if v is None:
        if optional or p.get("unset") is not None or (p["default"] is None and not p.get("required")):
            return None, None
    if t in ("float", "int"):
        kind = "an integer" if t == "int" else "a number"
        if isinstance(v, bool):
            return None, f"expected {kind}, not true or false"
        if isinstance(v, str):
            return None, f"expected {kind}, not a string"
        if not isinstance(v, int | float) or (isinstance(v, float) and not math.isfinite(v)):
            return None, f"expected {kind}"
        if t == "int":
            if isinstance(v, float):
                if not v.is_integer():
                    return None, "expected an integer"
                v = int(v)
        else:
            v = float(v)
        ok, above = _in_range(p, v)
        if not ok:
            return None, f"expected {kind} {_range(p, above)}"
        return v, None
    if t == "bool":
        return (v, None) if isinstance(v, bool) else (None, "expected true or false")
    if t == "str":
        if not isinstance(v, str):
            return None, "expected a string"
        if p.get("nonempty") and not v:
            return None, "expected a non-empty string"
        return v, None
    if t == "choice":
        ok = isinstance(v, str) and v in p["choices"]
        return (v, None) if ok else (None, f"expected one of {_words(p['choices'])}")
    if t == "int_or":
        if isinstance(v, str):
            ok = v in p["choices"]
            return (v, None) if ok else (None, f"expected an integer or {_words(p['choices'])}")
        got, expected = check_value({**p, "type": "int"}, v, optional)
        return (got, None) if expected is None else (None, f"{expected} or {_words(p['choices'])}")
    if t == "flag_or":
        ok = isinstance(v, bool) or (isinstance(v, str) and v in p["choices"])
        return (v, None) if ok else (None, f"expected true, false or {', '.join(map(repr, p['choices']))}")
    raise AssertionError(f"{p['name']}: no reading of declared type {t!r}")  # pragma: no cover


#: Readers of the kinds a scenario adds (a node's `dest`, a workload's
#: `cdf`, `seeds`): kind -> reader(value, where) -> value, raising TableError.
READERS: dict[str, Callable[[Any, str], Any]] = {}


def read_value(p: Mapping[str, Any], v: Any, where: str, optional: bool = False) -> Any:
    """Parameter `p`'s value `v` as held; TableError naming `where` (or one
    of its list elements, `where[i]`) when it is not allowed."""
    t = p["type"]
    if v is None and (optional or p.get("unset") is not None):
        return None
    if t in ("strs", "choices"):
        if not isinstance(v, list):
            raise TableError(where, f"{shown(v)} is not allowed; expected an array")
        element = {**p, "type": "choice" if t == "choices" else "str"}
        for i, x in enumerate(v):
            _, expected = check_value(element, x)
            if expected is not None:
                raise TableError(f"{where}[{i}]", f"{shown(x)} is not allowed; {expected}")
        return list(v)
    if t == "ints":
        n = p.get("length")
        if not isinstance(v, list) or (n and len(v) != n):
            want = f"expected an array of {n} integers" if n else "expected an array"
            raise TableError(where, f"{shown(v)} is not allowed; {want}")
        element = {**p, "type": "int"}
        out = []
        for i, x in enumerate(v):
            got, expected = check_value(element, x)
            if expected is not None:
                raise TableError(f"{where}[{i}]", f"{shown(x)} is not allowed; {expected}")
            out.append(got)
        return out
    reader = READERS.get(t)
    if reader is not None:
        return reader(v, where)
    got, expected = check_value(p, v, optional)
    if expected is not None:
        raise TableError(where, f"{shown(v)} is not allowed; {expected}")
    return got


def _slot(name: str) -> str:
    """The attribute of parameter `name` (`from` is a Python keyword)."""
    return "from_" if name == "from" else name


class Record:
    """A checked table: its parameters as attributes (every one, defaults
    filled), `fields_set` (the keys the user gave) and `dump()`."""

    __slots__ = ("_fields_set",)
    #: The declaration this record class reads (set on each subclass).
    declaration: dict[str, Any] = {}
    #: Its parameters in declared order, and those a node may leave unset.
    names: tuple[str, ...] = ()
    optional: frozenset[str] = frozenset()
    _params: dict[str, Any] = {}

    def __init__(self, **values: Any) -> None:
        checked = self.check(values, self.declaration["name"])
        for k, v in checked.items():
            object.__setattr__(self, _slot(k), v)
        object.__setattr__(self, "_fields_set", frozenset(values))

    @classmethod
    def check(cls, given: Any, where: str) -> dict[str, Any]:
        """`given` (a table) checked: every parameter, defaults filled (a
        parameter a node may leave unset: None), in declared order, then
        any unknown key. Raises TableError naming the first one at fault."""
        if not isinstance(given, dict):
            raise TableError(where or "scenario", f"{shown(given)} is not allowed; expected a table")
        out: dict[str, Any] = {}
        for name in cls.names:
            p = cls._params[name]
            at = f"{where}.{name}" if where else name
            if name not in given:
                if p.get("required"):
                    raise TableError(at, f"required parameter is missing ({p['help']})")
                d = None if name in cls.optional else p["default"]
                out[name] = list(d) if isinstance(d, list) else d
                continue
            out[name] = read_value(p, given[name], at, optional=name in cls.optional)
        for k in given:
            if k not in cls._params:
                at = f"{where}.{k}" if where else str(k)
                known = ", ".join(cls.names)
                what = (
                    f"unknown parameter; known: {known}"
                    if known
                    else "unknown parameter; this table takes no parameters"
                )
                raise TableError(at, what)
        return out

    @classmethod
    def read(cls, given: Any, where: str) -> Record:
        """A record of `given`, checked (`check`)."""
        return cls.made(cls.check(given, where), frozenset(given))

    @classmethod
    def made(cls, values: dict[str, Any], fields_set: frozenset[str] = frozenset()) -> Record:
        """A record of values already checked."""
        r = object.__new__(cls)
        put = object.__setattr__
        for k, v in values.items():
            put(r, "from_" if k == "from" else k, v)
        put(r, "_fields_set", fields_set)
        return r

    @property
    def fields_set(self) -> frozenset[str]:
        return self._fields_set

    def dump(self, exclude_none: bool = False, exclude: frozenset[str] = frozenset()) -> dict[str, Any]:
        """The table as a dict, every parameter (nested records as dicts)
        but those named in `exclude`."""
        out = {}
        for n in self.names:
            if n in exclude:
                continue
            v = getattr(self, "from_" if n == "from" else n)
            if type(v) not in _SCALARS:  # a record, a list or a table: dumped in turn
                v = _dumped(v, exclude_none)
            if v is not None or not exclude_none:
                out[n] = v
        return out

    def __setattr__(self, name: str, value: Any) -> None:
        """A parameter set is checked as when read (a value refused raises
        TableError); a name not declared is an AttributeError."""
        key = "from" if name == "from_" else name
        p = self._params.get(key)
        if p is None:
            raise AttributeError(f"{type(self).__name__} has no parameter {key!r}")
        v = read_value(p, value, f"{self.declaration['name']}.{key}", optional=key in self.optional)
        object.__setattr__(self, name, v)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.dump() == other.dump()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.dump())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.dump().items())})"


#: Values a dump holds as they are (the common case: no call per value).
_SCALARS = frozenset((int, float, str, bool, type(None)))


def _dumped(v: Any, exclude_none: bool) -> Any:
    if isinstance(v, Record):
        return v.dump(exclude_none)
    if isinstance(v, list):
        return [_dumped(x, exclude_none) for x in v]
    if isinstance(v, dict):
        return {k: _dumped(x, exclude_none) for k, x in v.items()}
    return v


def record(
    t: dict[str, Any], name: str | None = None, optional: frozenset[str] = frozenset()
) -> type[Record]:
    """The record class of declared table `t` (its parameters set by a
    scheme's name, `fixed`, left out); `optional`: parameters that may be
    left unset (None), as a node's own station / bridge keys."""
    params = {p["name"]: p for p in t["params"] if not p["fixed"]}
    names = tuple(params)
    cls_name = name or "".join(w.capitalize() for w in t["name"].split("_")) + "Table"
    ns = {
        "__slots__": tuple(_slot(n) for n in names),
        "declaration": t,
        "names": names,
        "_params": params,
        "optional": optional,
        "__doc__": t["doc"],
    }
    return type(cls_name, (Record,), ns)


# ---------------------------------------------------------------- declaring


def _bound(value: float | None, inclusive: bool) -> dict[str, Any] | None:
    return None if value is None else {"value": value, "inclusive": inclusive}


def _range_text(lo: dict[str, Any] | None, hi: dict[str, Any] | None) -> str:
    parts = []
    for b, (closed, open_) in ((lo, (">=", ">")), (hi, ("<=", "<"))):
        if b is not None:
            v = b["value"]
            parts.append(f"{closed if b['inclusive'] else open_} {int(v) if float(v).is_integer() else v}")
    return " and ".join(parts)


def param(
    name: str,
    typ: str,
    help: str,
    default: Any = None,
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    required: bool = False,
    unset: str | None = None,
    choices: list[str] | None = None,
    nonempty: bool = False,
) -> dict[str, Any]:
    """One declared parameter, as the engine's `Table::to_json` writes it
    (`typ`: a kind of the engine's, or one only Python reads: `dest`, `cdf`,
    `seeds`, `weights_or_name`; `nonempty`: a string that may not be empty).
    The one helper for every table declared in Python
    (`scenario.analysis_sections`, `scenario.model`: the analysis sections and a
    hotspot destination)."""
    unit = unit_of(name)
    if unit in ("ms", "us") and le is None and lt is None:  # a time fits the engine's clock
        le = limits()["max_ms"] if unit == "ms" else limits()["max_us"]
    lo = _bound(gt, False) if gt is not None else _bound(ge, True)
    hi = _bound(lt, False) if lt is not None else _bound(le, True)
    return {
        "name": name,
        "unit": unit,
        "quantity": quantity_of(name),
        "type": typ,
        "default": None if required or unset else default,
        "min": lo,
        "max": hi,
        "range": _range_text(lo, hi),
        "choices": choices,
        "help": help,
        "fixed": False,
        "required": required,
        "unset": unset,
        "nonempty": nonempty,
    }


def table(name: str, doc: str, *params: dict[str, Any]) -> dict[str, Any]:
    """A table of declared parameters, in the engine's format."""
    return {"name": name, "doc": doc, "params": list(params), "rules": [], "per_node": []}
