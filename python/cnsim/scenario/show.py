"""The resolved scenario as commented TOML (`cnsim show`): every parameter
with its value, and its unit and meaning from its declaration."""

from __future__ import annotations

import inspect
from typing import Any

from ..docs import unit_of
from ..parameters import Record
from ..schemes import RULES, SCHEMES
from .model import help_of, section_record
from .toml_text import _toml_key, _toml_value, loads


def _described(cls: type[Record] | None, key: str) -> str:
    if cls is None:
        return help_of(key)
    p = cls._params.get(key)
    return p["help"] if p else ""


def _emit(lines: list[str], key: str, value: Any, cls: type[Record] | None, described: bool = True) -> None:
    text = f"{_toml_key(key)} = {_toml_value(value)}"
    desc = _described(cls, key) if described else ""
    unit = unit_of(key)
    if desc and unit and f"({unit}" not in desc:
        desc = f"{desc} ({unit})"
    lines.append(f"{text:<40} # {desc}" if desc else text)


def _emit_table(lines: list[str], header: str, table: dict[str, Any], cls: type[Record] | None) -> None:
    lines.append("")
    doc = inspect.cleandoc(cls.__doc__ or "").splitlines() if cls is not None else []
    lines.extend(f"# {line}".rstrip() for line in doc)
    rules = RULES.get(header.strip("[]"))
    if rules:
        lines.append("# rules: " + "; ".join(rules))
    lines.append(header)
    for k, v in table.items():
        if cls is None:
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
        else:
            _emit(lines, k, v, cls)
    if cls is not None:  # optional parameters left unset, with their meaning
        for key in cls.names:
            if key not in table:
                lines.append(f"{'# ' + key + ' = (not set)':<40} # {cls._params[key]['help']}")


def commented_toml(d: dict[str, Any], sc: Any) -> str:
    """`d` (a scenario's resolved parameters) as TOML with every parameter's
    unit and meaning; `sc`: the cnsim.Scenario it came from (its name and
    scheme). Below the Scenario: `Scenario.to_toml()` calls it."""
    lines = [
        f"# Scenario {sc.name!r}, resolved: every parameter with its value; units in the",
        "# names and comments (docs/scenario-format.md). Re-run it with `cnsim run FILE`.",
    ]
    tables = {k: v for k, v in d.items() if isinstance(v, dict)}
    arrays = {k: v for k, v in d.items() if isinstance(v, list) and k in ("nodes", "links", "events")}
    for k, v in d.items():
        if k not in tables and k not in arrays:
            _emit(lines, k, v, None)
    for k, v in tables.items():
        cls = section_record(k)
        if k == "windows":  # [windows.NAME]
            for wn, w in v.items():
                _emit_table(lines, f"[{k}.{_toml_key(wn)}]", w, cls)
        else:
            if k == SCHEMES[sc.scheme][0]:
                lines.append("")
                lines.append(f"# ---- parameters of the scheme in use ({sc.scheme})")
            _emit_table(lines, f"[{k}]", v, cls)
    for k, items in arrays.items():
        cls = section_record(k)
        seen: set[str] = set()
        for item in items:
            lines.append("")
            lines.append(f"[[{k}]]")
            for ik, iv in item.items():  # each key's meaning once per array
                _emit(lines, ik, iv, cls, described=ik not in seen)
                seen.add(ik)
    text = "\n".join(lines) + "\n"
    loads(text)  # what we write must read back
    return text
