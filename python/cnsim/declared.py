"""pydantic models built from the engine's parameter declarations
(`declarations.json`, written from `crates/cnsim-core/src/params.rs` and the
tables declared with it): one field per declared parameter, with its type,
default, range and help. The schemes' tables (`cnsim.schemes`) and the
scenario's sections (`[pause]`, `[defaults]`, `[bridge]`, `[station]` and a
node's own keys, `cnsim.scenario.model`) are built here, so the Python
checks, `cnsim show`, the CLI help and the docs cannot drift from the
engine's. Rules that tie parameters together are checked by the engine
alone (`Scenario.engine_config_checked`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

from .declarations import declarations

_TYPES: dict[str, Any] = {"float": float, "int": int, "bool": bool, "str": str, "strs": list[str]}


def _bounds(p: dict[str, Any]) -> dict[str, float]:
    """pydantic's gt / ge / lt / le of a declared range."""
    bounds: dict[str, float] = {}
    for side, (open_, closed) in (("min", ("gt", "ge")), ("max", ("lt", "le"))):
        b = p[side]
        if b is not None:
            v = b["value"]
            bounds[closed if b["inclusive"] else open_] = (
                int(v) if p["type"] == "int" and float(v).is_integer() else v
            )
    return bounds


def field(p: dict[str, Any], optional: str | None = None) -> tuple[Any, Any]:
    """The pydantic field of declared parameter `p`; with `optional`, a field
    that may be left unset (None), `optional` saying what applies then."""
    typ = _TYPES.get(p["type"]) or (p["choices"] and Literal[tuple(p["choices"])])
    if p["type"] == "flag_or":  # a switch or one of its words (`auto`)
        typ = bool | typ
    elif p["type"] == "choices":  # a list of words
        typ = list[typ]  # type: ignore[valid-type]
    bounds = _bounds(p)
    if p["type"] == "count_or_list":
        # A count in the range, or a list of distinct seeds (pydantic bounds
        # the count; distinctness is Scenario's and the engine's check).
        count = Annotated[int, Field(**bounds)]
        typ, bounds = count | list[Annotated[int, Field(ge=0, lt=2**63)]], {}
        help_ = f"{p['help']} (a count {p['range']}; seeds >= 0 and < 2^63)"
        return typ, Field(p["default"], description=help_)
    if optional is not None:
        return typ | None, Field(None, description=f"{p['help']} (none: {optional})", **bounds)
    if p.get("required"):
        return typ, Field(..., description=p["help"], **bounds)
    if p.get("unset"):  # may be left unset; its help says what applies then
        return typ | None, Field(None, description=p["help"], **bounds)
    # (pydantic copies a list default for each model made)
    return typ, Field(p["default"], description=p["help"], **bounds)


def model(t: dict[str, Any], base: type[BaseModel], name: str | None = None) -> type[BaseModel]:
    """The model of declared table `t` (its parameters set by a scheme's
    name, `fixed`, left out)."""
    fields = {p["name"]: field(p) for p in t["params"] if not p["fixed"]}
    name = name or "".join(w.capitalize() for w in t["name"].split("_")) + "Table"
    return create_model(name, __base__=base, __doc__=t["doc"], **fields)  # type: ignore[call-overload,no-any-return]


def section(name: str) -> dict[str, Any]:
    """The declaration of the scenario's section `name` (`pause`, ...)."""
    return next(t for t in declarations()["sections"] if t["name"] == name)


def per_node_fields(name: str) -> dict[str, tuple[Any, Any]]:
    """The optional `[[nodes]]` fields of section `name` (`station`,
    `bridge`): the keys a node may set for itself, unset meaning the
    section's value."""
    t = section(name)
    return {p["name"]: field(p, optional=f"[{name}]") for p in t["params"] if p["name"] in t["per_node"]}


def rules() -> dict[str, list[str]]:
    """Every declared table's rules as users read them, by table name."""
    d = declarations()
    return {t["name"]: [r["text"] for r in t["rules"]] for t in [*d["tables"], *d["sections"]]}
