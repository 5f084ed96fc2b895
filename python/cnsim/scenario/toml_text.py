"""Keys and values written as TOML text (in `cnsim show` and in errors)."""

from __future__ import annotations

import json
import re
from typing import Any

try:  # tomli's compiled wheels read TOML in half tomllib's time (the same parser, pure Python)
    import tomli as toml
except ImportError:  # pragma: no cover - a platform without its wheel
    import tomllib as toml  # type: ignore[no-redef]

#: The TOML reader and its error (scenario files, and `cnsim show`'s check of what it wrote).
loads = toml.loads
TOMLDecodeError = toml.TOMLDecodeError

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    import tomli_w  # a writer: not needed to read a scenario

    return tomli_w.dumps({"v": v})[4:].rstrip("\n")
