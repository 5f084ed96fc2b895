"""A pydantic validation error as one line naming the parameter as the user
wrote it (`nodes.S1.load: 1.5 is not allowed; expected a number >= 0 and <= 1`)."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from .model import ENGINE_LIMITS, ScenarioModel
from .toml_text import _toml_value


def _unwrap(ann: Any) -> tuple[Any, bool]:
    """(inner type, container?) of an annotation: Optional stripped, list[X] / dict[str, X] -> X."""
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
        return ann, False
    if origin in (list, dict):
        return typing.get_args(ann)[-1], True
    return ann, False


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _is_union(ann: Any) -> bool:
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        return len([a for a in typing.get_args(ann) if a is not type(None)]) > 1
    return False


def _field_name(cls: type[BaseModel], key: str) -> str | None:
    if key in cls.model_fields:
        return key
    for name, f in cls.model_fields.items():
        if f.alias == key:
            return name
    return None


def _walk(
    loc: tuple[Any, ...], root: type[BaseModel]
) -> tuple[int, FieldInfo | None, type[BaseModel] | None]:
    """Follows a pydantic error location through the models from `root`. Returns
    how many parts name a parameter (the rest are pydantic's union tags), the
    field reached, and the model that holds it."""
    cls: Any = root
    field: FieldInfo | None = None
    parent: type[BaseModel] | None = None
    skip = False
    for i, p in enumerate(loc):
        if skip:  # a list index or a dict key
            skip = False
            continue
        if not _is_model(cls):
            return (i if field is not None and _is_union(field.annotation) else len(loc)), field, parent
        name = _field_name(cls, str(p))
        if name is None:
            return len(loc), None, cls
        parent, field = cls, cls.model_fields[name]
        inner, container = _unwrap(field.annotation)
        cls, skip = inner, container
    return len(loc), field, parent


def _where(loc: tuple[Any, ...], raw: dict[str, Any]) -> str:
    """A pydantic error location as a dotted name (nodes by name, links by ends)."""
    parts: list[str] = []
    cur: Any = raw
    for i, p in enumerate(loc):
        if isinstance(p, int) and i > 0 and loc[i - 1] in ("nodes", "links", "events"):
            item = cur[p] if isinstance(cur, list) and p < len(cur) else None
            if loc[i - 1] == "nodes" and isinstance(item, dict) and "name" in item:
                parts[-1] = f"nodes.{item['name']}"
            elif loc[i - 1] == "links" and isinstance(item, dict):
                parts[-1] = f"links.{item.get('a')}-{item.get('b')}"
            else:
                parts[-1] = f"{loc[i - 1]}[{p}]"
            cur = item
            continue
        parts.append("from" if p == "from_" else str(p))
        cur = cur.get(p) if isinstance(cur, dict) else None
    return ".".join(parts) or "scenario"


def _kind(field: FieldInfo | None) -> str:
    inner, _ = _unwrap(field.annotation) if field is not None else (None, False)
    return "an integer" if inner is int else "a number"


def _expected(err: Any, field: FieldInfo | None) -> str:
    """What is allowed, in words, for a pydantic error."""
    t, ctx = err["type"], err.get("ctx") or {}
    bounds = {
        "greater_than_equal": (">=", "ge"),
        "greater_than": (">", "gt"),
        "less_than_equal": ("<=", "le"),
        "less_than": ("<", "lt"),
    }
    if t in bounds:
        found: list[str] = []
        # The whole range, except that the engine's limits (MAX_MS, ...) are
        # only named when crossed: a negative size hears ">= 0", not ">= 0
        # and <= 1099511627776".
        sides = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
        crossed_upper = not t.startswith("greater")
        for m in field.metadata if field is not None else []:
            for key, op in sides:
                if key == "le" and getattr(m, key, None) in ENGINE_LIMITS and not crossed_upper:
                    continue
                if key in ("ge", "gt") and crossed_upper and _has_engine_limit(field):
                    continue
                v = getattr(m, key, None)
                if v is not None:
                    found.append(f"{op} {_num(v)}")
        if not found:
            op, key = bounds[t]
            found = [f"{op} {_num(ctx.get(key))}"]
        return f"expected {_kind(field)} " + " and ".join(found)
    if t == "bool_not_number":
        return f"expected {_kind(field)}, not true or false"
    if t == "string_not_number":
        return f"expected {_kind(field)}, not a string"
    if t == "switch_type":
        return str(err["msg"])
    if t in ("int_type", "int_parsing", "int_from_float"):
        return "expected an integer"
    if t in ("float_type", "float_parsing", "finite_number"):
        return "expected a number"
    if t in ("bool_type", "bool_parsing"):
        return "expected true or false"
    if t == "string_type":
        return "expected a string"
    if t == "string_too_short":
        return "expected a non-empty string"
    if t == "literal_error":
        return f"expected one of {ctx.get('expected')}"
    if t in ("list_type", "dict_type", "model_type", "model_attributes_type"):
        return {
            "list_type": "expected an array",
            "dict_type": "expected a table",
        }.get(t, "expected a table")
    if field is not None and field.description:
        return f"expected {field.description}"
    return err["msg"][0].lower() + err["msg"][1:]


def _has_engine_limit(field: FieldInfo) -> bool:
    return any(getattr(m, "le", None) in ENGINE_LIMITS for m in field.metadata)


def _num(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _known(cls: type[BaseModel] | None) -> str:
    if cls is None:
        return ""
    keys = [f.alias or n for n, f in cls.model_fields.items()]
    return f"; known: {', '.join(keys)}" if keys else "; this table takes no parameters"


def one_line(
    e: ValidationError, raw: dict[str, Any], root: type[BaseModel] = ScenarioModel, prefix: str = ""
) -> str:
    """The first error of a ValidationError of `root` (validating `raw`) as one
    line naming the parameter; `prefix` names where `raw` sits (`topology`)."""
    err = e.errors()[0]
    loc = tuple(x for x in err["loc"] if not str(x).startswith("function-"))
    n, field, parent = _walk(loc, root)
    where = _where(loc[:n], raw)
    if prefix:
        where = prefix if where == "scenario" else f"{prefix}.{where}"
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"{where}: unknown parameter{_known(parent)}"
    if kind == "missing":
        desc = f" ({field.description})" if field is not None and field.description else ""
        return f"{where}: required parameter is missing{desc}"
    value = err.get("input")
    if n < len(loc):  # a union (e.g. a node's dest): name the field, not pydantic's tag
        desc = field.description if field is not None and field.description else "another type"
        return f"{where}: {_show(value)} is not allowed; expected {desc}"
    if kind == "value_error":
        msg = err["msg"].removeprefix("Value error, ")
        return f"{where}: {msg}"
    if isinstance(value, dict) and kind not in ("model_type", "model_attributes_type", "list_type"):
        return f"{where}: {err['msg']}"
    return f"{where}: {_show(value)} is not allowed; {_expected(err, field)}"


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return _toml_value(value)
    return str(value)
