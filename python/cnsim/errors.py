"""Errors shown to users as one line (exit status 2 from the CLI)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ScenarioError(ValueError):
    """A bad scenario, parameter or option. The message names the parameter,
    its bad value and what is allowed, on one line: a value that holds a
    newline or another control character is shown escaped (`\\n`).
    `param`: the dotted name of the parameter at fault, when known, kept
    apart from the message (the engine's checks give it as their error's
    `path`); a rule over several parameters names them all, joined by
    ` / ` (`pause.xon_bytes / pause.xoff_bytes`). `option`: the command-line
    option that made the change at fault (`--set`, `--grid`): the line
    starts with it, before `message` (kept as `what`)."""

    def __init__(self, message: str, param: str | None = None, option: str | None = None) -> None:
        self.what = _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(message))
        super().__init__(f"{option} {self.what}" if option else self.what)
        self.param = param or None
        self.option = option or None

    @classmethod
    def at(cls, param: str, what: str) -> ScenarioError:
        """The error of parameter `param`, shown as `param: what`."""
        return cls(f"{param}: {what}", param=param)


def param_of(e: BaseException) -> str | None:
    """The parameter an error names: a ScenarioError's `param`, the engine's
    EngineConfigError's `path`, a declared table's TableError's `where`."""
    for attr in ("param", "path", "where"):
        v = getattr(e, attr, None)
        if isinstance(v, str) and v:
            return v
    return None


def names_a_key(param: str | None, keys: Iterable[str]) -> bool:
    """Whether the parameter at fault (the first one a rule names) is one of
    `keys` or lies inside one (`pause` set as a whole table): the keys a
    user changed need not then be named beside it."""
    if not param:
        return False
    first = param.split(" / ", 1)[0]
    return any(first == k or first.startswith(f"{k}.") for k in keys)


class ScenarioWarning(UserWarning):
    """A legal but probably unintended scenario (a measurement window the
    shortened run clipped or dropped): the CLI prints it as one
    `warning: ...` line on stderr and goes on."""
