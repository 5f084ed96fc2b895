"""The fuzz harness (tests/fuzz.py) on every CI run, within a budget: random
scenario files, damaged TOML and --set strings each give a valid scenario
or one ScenarioError line, never another exception."""

from __future__ import annotations

import fuzz  # noqa: E402  (the harness, tests/fuzz.py: broken, it fails)
import pytest


@pytest.mark.parametrize(
    "index", [0, 1, 2, 3], ids=["scenario files", "--set strings", "damaged TOML", "flow scenarios"]
)
def test_no_input_escapes(index):
    fuzz.make_tests(examples=1000)[index]()
