#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) and installs cnsim into it, building the
# Rust engine once in release mode. Safe to run again: it only rebuilds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $("$PY" --version)"
    "$PY" -m venv .venv
fi
echo "setup: installing Python packages"
.venv/bin/python -m pip install -q --upgrade pip
# Editable install: maturin builds cnsim._core (release profile, pyproject.toml).
echo "setup: building the Rust engine in release mode and installing cnsim (a minute on a first build)"
.venv/bin/python -m pip install -q -e '.[dev]'
echo "setup: done ($(.venv/bin/python -c 'import cnsim; print("cnsim", cnsim.__version__)'))"
