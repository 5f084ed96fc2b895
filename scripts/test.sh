#!/usr/bin/env bash
# The whole test suite: formatting and lints, the Rust engine's tests, the
# Python package's tests (including the slower multi-seed checks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== cargo fmt / clippy"
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets -q -- -D warnings
echo "== cargo test (engine)"
cargo test --profile test-release -p cnsim-core -q
echo "== ruff"
ruff check python tests scripts
ruff format --check python tests scripts
echo "== pytest"
python -m pytest -q "$@"
