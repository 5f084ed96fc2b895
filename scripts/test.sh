#!/usr/bin/env bash
# The whole test suite: formatting and lints, the Rust engine's tests, the
# Python package's tests (including the slower multi-seed checks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== cargo fmt / clippy (${SECONDS} s so far)"
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets -q -- -D warnings
echo "== cargo test (engine) (${SECONDS} s so far)"
# --lib: the end-to-end tests in crates/cnsim-core/tests/ are modules of the
# library's test binary; the examples are compiled (checked) by clippy.
cargo test --profile test-release -p cnsim-core --lib -q
echo "== ruff"
ruff check python tests scripts
ruff format --check python tests scripts
echo "== pytest (${SECONDS} s so far)"
# Two workers on a two-core machine (pytest-xdist; CNSIM_TEST_WORKERS=0 runs
# in one process): tests are independent (each its own tmp_path), and
# worksteal keeps both busy while the longest ones run.
python -m pytest -q -n "${CNSIM_TEST_WORKERS:-auto}" --dist worksteal "$@"
echo "== done in ${SECONDS} s"
