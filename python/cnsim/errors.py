"""Errors shown to users as one line (exit status 2 from the CLI)."""


class ScenarioError(ValueError):
    """A bad scenario, parameter or option. The message names the parameter,
    its bad value and what is allowed, on one line."""
