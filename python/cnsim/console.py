"""What the command line prints: the results console, one-line warnings
and errors on stderr, and numbers as tables show them. rich is imported on
first use, so a command that prints nothing heavy (`--help`) never loads it."""

from __future__ import annotations

from typing import Any


class _Out:
    """stdout through a rich Console made on first use. Plain text: names and
    messages from scenario files are printed as written, never read as rich
    markup ("use [measure]" keeps its brackets)."""

    _console: Any = None

    def print(self, *a: Any, **k: Any) -> None:
        self.console().print(*a, **k)

    def render(self, *items: Any) -> str:
        """`items` as `print` would show them, one after another, as text for
        this terminal (styles included when it shows them), to `write` later."""
        c = self.console()
        with c.capture() as captured:
            for item in items:
                c.print(item)
        return captured.get()

    def write(self, text: str) -> None:
        """Text made by `render`, as it is."""
        import sys

        sys.stdout.write(text)
        sys.stdout.flush()

    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(markup=False, emoji=False)
        return self._console


out = _Out()


def prepare() -> None:
    """Imports rich and makes the results console now (`cnsim run` calls it
    while the engine runs, so the summary prints without a wait)."""
    import rich.table  # noqa: F401 - imported for its side effect: loaded before it is needed

    if out._console is None:
        from rich.console import Console

        out._console = Console(markup=False, emoji=False)


def Table(*a: Any, **k: Any) -> Any:  # noqa: N802 - rich's Table, imported on first use
    from rich.table import Table as RichTable

    return RichTable(*a, **k)


def Text(*a: Any, **k: Any) -> Any:  # noqa: N802 - rich's Text, imported on first use
    from rich.text import Text as RichText

    return RichText(*a, **k)


def _assemble(*parts: Any) -> Any:
    from rich.text import Text as RichText

    return RichText.assemble(*parts)


Text.assemble = _assemble  # type: ignore[attr-defined]


def warn(msg: str) -> None:
    """One yellow `warning:` line on stderr; the command goes on."""
    from rich.console import Console

    Console(stderr=True).print(_assemble(("warning:", "yellow"), f" {msg}"), soft_wrap=True)


def print_error(msg: str) -> None:
    """One line on stderr; the message is plain text, never rich markup."""
    from rich.console import Console

    Console(stderr=True).print(_assemble(("error:", "bold red"), " ", msg), highlight=False, soft_wrap=True)


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
