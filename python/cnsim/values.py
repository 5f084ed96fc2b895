"""Values taken as written: a scenario's parameters are never converted
from another type (pydantic's lax mode would read "5" as 5, "yes" and 1 as
true): one `mode="before"` validator for every field of the scenario's
models and the schemes' tables."""

from __future__ import annotations

import functools
import typing
from typing import Any, Literal

from pydantic import BaseModel, ValidationInfo
from pydantic_core import PydanticCustomError


def refuse_bool_as_number(cls: type[BaseModel], v: Any, info: ValidationInfo) -> Any:
    """Values are taken as written, never converted: true / false where a
    number is declared is an error, never 1 / 0; a string where a number or
    a switch is declared is an error, never its number ("5") or its truth
    ("yes"); a number where a switch is declared is an error."""
    if info.field_name is None:
        return v
    ann, number, switch = _field_kind(cls, info.field_name)
    if isinstance(v, bool) and not switch:
        raise PydanticCustomError("bool_not_number", "expected a number, not true or false")
    if isinstance(v, str) and (number or switch) and not _admits_str(ann, v):
        if number:
            raise PydanticCustomError("string_not_number", "expected a number, not a string")
        raise PydanticCustomError("switch_type", _switch_text(ann))
    if switch and not number and isinstance(v, int | float) and not isinstance(v, bool):
        raise PydanticCustomError("switch_type", _switch_text(ann))  # nor 1 or 0 as a switch
    return v


@functools.cache
def _field_kind(cls: type[BaseModel], field: str) -> tuple[Any, bool, bool]:
    """(annotation, takes a number, takes a switch) of a model's field: worked
    out once per field, not once per value (a 10,000-node scenario validates
    60,000 values)."""
    ann = cls.model_fields[field].annotation
    return ann, _admits_number(ann), _admits_bool(ann)


def _switch_text(ann: Any) -> str:
    words = [
        repr(w)
        for a in (ann, *typing.get_args(ann))
        if typing.get_origin(a) is Literal
        for w in typing.get_args(a)
    ]
    return f"expected true, false or {', '.join(words)}" if words else "expected true or false"


def _admits_bool(ann: Any) -> bool:
    if ann is bool or ann is Any:
        return True
    if typing.get_origin(ann) in (list, dict, Literal):
        return False
    return any(_admits_bool(a) for a in typing.get_args(ann))


def _admits_number(ann: Any) -> bool:
    if ann in (int, float) or ann is Any:
        return True
    if typing.get_origin(ann) in (list, dict, Literal):
        return False
    return any(_admits_number(a) for a in typing.get_args(ann))


def _admits_str(ann: Any, v: str) -> bool:
    """Whether `ann` takes the string `v` as it is (a str, or a Literal naming it)."""
    if ann is str or ann is Any:
        return True
    origin = typing.get_origin(ann)
    if origin is Literal:
        return v in typing.get_args(ann)
    if origin in (list, dict):
        return False
    return any(_admits_str(a, v) for a in typing.get_args(ann))
