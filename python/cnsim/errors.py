"""Errors shown to users as one line (exit status 2 from the CLI)."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ScenarioError(ValueError):
    """A bad scenario, parameter or option. The message names the parameter,
    its bad value and what is allowed, on one line: a value that holds a
    newline or another control character is shown escaped (`\\n`).
    `param`: the dotted name of the parameter at fault, when known (the
    engine's checks give it as a field path)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(_CONTROL.sub(lambda m: repr(m.group())[1:-1], str(message)))
        self.param = param
