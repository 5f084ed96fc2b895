"""The resolved scenario as commented TOML (`cnsim show`): every parameter
with its value, and its unit and meaning from its declaration."""

from __future__ import annotations

import inspect
import tomllib
from typing import Any

from ..docs import unit_of
from ..schemes import RULES, SCHEMES
from .messages import _field_name, _is_model, _unwrap
from .model import ScenarioModel
from .toml_text import _toml_key, _toml_value


def _described(cls: Any, key: str) -> str:
    if not _is_model(cls):
        return ""
    name = _field_name(cls, key)
    if name is None:
        return ""
    return cls.model_fields[name].description or ""


def _emit(lines: list[str], key: str, value: Any, cls: Any) -> None:
    text = f"{_toml_key(key)} = {_toml_value(value)}"
    desc = _described(cls, key)
    unit = unit_of(key)
    if desc and unit and f"({unit}" not in desc:
        desc = f"{desc} ({unit})"
    lines.append(f"{text:<40} # {desc}" if desc else text)


def _emit_table(lines: list[str], header: str, table: dict[str, Any], cls: Any) -> None:
    lines.append("")
    doc = inspect.cleandoc(cls.__doc__ or "").splitlines() if _is_model(cls) else []
    lines.extend(f"# {line}".rstrip() for line in doc)
    rules = RULES.get(header.strip("[]"))
    if rules:
        lines.append("# rules: " + "; ".join(rules))
    lines.append(header)
    for k, v in table.items():
        _emit(lines, k, v, cls)
    if _is_model(cls):  # optional parameters left unset, with their meaning
        for name, f in cls.model_fields.items():
            key = f.alias or name
            if key not in table:
                lines.append(f"{'# ' + key + ' = (not set)':<40} # {f.description or ''}")


def commented_toml(d: dict[str, Any], sc: Any) -> str:
    """`d` (a scenario's resolved parameters) as TOML with every parameter's
    unit and meaning; `sc`: the cnsim.Scenario it came from (its name and
    scheme). Below the Scenario: `Scenario.to_toml()` calls it."""
    lines = [
        f"# Scenario {sc.name!r}, resolved: every parameter with its value; units in the",
        "# names and comments (docs/scenario-format.md). Re-run it with `cnsim run FILE`.",
    ]
    fields = ScenarioModel.model_fields
    tables = {k: v for k, v in d.items() if isinstance(v, dict)}
    arrays = {k: v for k, v in d.items() if isinstance(v, list) and k in ("nodes", "links", "events")}
    for k, v in d.items():
        if k not in tables and k not in arrays:
            _emit(lines, k, v, ScenarioModel)
    for k, v in tables.items():
        inner, container = _unwrap(fields[k].annotation)
        if container and _is_model(inner):  # [windows.NAME]
            for wn, w in v.items():
                _emit_table(lines, f"[{k}.{_toml_key(wn)}]", w, inner)
        else:
            if k == SCHEMES[sc.scheme][0]:
                lines.append("")
                lines.append(f"# ---- parameters of the scheme in use ({sc.scheme})")
            _emit_table(lines, f"[{k}]", v, inner)
    for k, items in arrays.items():
        inner, _ = _unwrap(fields[k].annotation)
        seen: set[str] = set()
        for item in items:
            lines.append("")
            lines.append(f"[[{k}]]")
            for ik, iv in item.items():  # each key's meaning once per array
                _emit(lines, ik, iv, inner if ik not in seen else None)
                seen.add(ik)
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # what we write must read back
    return text
