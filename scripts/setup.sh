#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) and installs cnsim into it, building the
# Rust engine once in release mode. Safe to run again: it only rebuilds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# Editable install: maturin builds cnsim._core (release profile, pyproject.toml).
.venv/bin/python -m pip install -q -e '.[dev]'
