#!/usr/bin/env bash
# Installing without building in place: the Python wheel (maturin, `bindings = "bin"`) into a
# clean virtualenv, and `cargo install --locked` into a root of its own; each installed binary
# is run from where it was installed: its version, `list` on the reference project, and the
# demo (a throwaway PostgreSQL, every check passing).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One target folder: the wheel's release build is the one cargo install finds.
export CARGO_TARGET_DIR="$work/target"

echo "-- the wheel"
python3 -m venv "$work/build"
"$work/build/bin/pip" install --quiet 'maturin>=1.5,<2'
"$work/build/bin/maturin" build --release --locked --quiet -o "$work/dist"
python3 -m venv "$work/clean"
"$work/clean/bin/pip" install --quiet "$work"/dist/plancheck-*.whl
installed=("$work/clean/bin/plancheck")

echo "-- cargo install --locked"
cargo install --locked --quiet --path . --root "$work/cargo"
installed+=("$work/cargo/bin/plancheck")

for bin in "${installed[@]}"; do
    "$bin" --version
    "$bin" list --project . | tail -1
    ( cd "$work" && "$bin" demo --fresh --quiet | tail -1 )
done
