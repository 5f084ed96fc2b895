"""What the command line prints: the results console, one-line warnings
and errors on stderr, and numbers as tables show them."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

# Plain text: names and messages from scenario files are printed as written,
# never read as rich markup ("use [measure]" keeps its brackets).
out = Console(markup=False)


def warn(msg: str) -> None:
    """One yellow `warning:` line on stderr; the command goes on."""
    Console(stderr=True).print(Text.assemble(("warning:", "yellow"), f" {msg}"), soft_wrap=True)


def print_error(msg: str) -> None:
    """One line on stderr; the message is plain text, never rich markup."""
    Console(stderr=True).print(
        Text.assemble(("error:", "bold red"), " ", msg), highlight=False, soft_wrap=True
    )


def fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and abs(v) >= 1e4:
        return f"{v:,.0f}"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)
