"""The fuzz harness (tests/fuzz.py) on every CI run, within a budget: random
scenario files, damaged TOML, --set strings and flow scenarios each give a
valid scenario or one ScenarioError line, never another exception; traced
runs, seed lists of every length and tampered results directories save,
check and reopen as issue 37 asks."""

from __future__ import annotations

import fuzz  # noqa: E402  (the harness, tests/fuzz.py: broken, it fails)
import pytest


@pytest.mark.parametrize(
    "index",
    list(range(7)),
    ids=[
        "scenario files",
        "--set strings",
        "damaged TOML",
        "flow scenarios",
        "traced runs",
        "seed lists",
        "tampered results",
    ],
)
def test_no_input_escapes(index):
    fuzz.make_tests(examples=1000)[index]()
