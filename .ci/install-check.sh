#!/usr/bin/env bash
# Installing without building in place: the Python wheel (maturin, `bindings = "bin"`) into a
# clean virtualenv, `cargo install --locked` into a root of its own, and the npm packages (the
# launcher and the platform's binary) into a clean folder; each installed binary is run from
# where it was installed: its version, `list` on the reference project, and the
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

echo "-- the npm packages"
cp -r npm "$work/npm"
mkdir -p "$work/npm/linux-x64/bin"
cp "$CARGO_TARGET_DIR/release/plancheck" "$work/npm/linux-x64/bin/plancheck"
( cd "$work/npm/linux-x64" && npm pack --silent --pack-destination "$work" >/dev/null )
( cd "$work/npm/plancheck" && npm pack --silent --pack-destination "$work" >/dev/null )
mkdir -p "$work/node"
( cd "$work/node" && npm init -y >/dev/null \
    && npm install --silent --no-audit --no-fund "$work"/plancheck-linux-x64-*.tgz \
        "$work"/plancheck-0*.tgz )
installed+=("$work/node/node_modules/.bin/plancheck")

for bin in "${installed[@]}"; do
    "$bin" --version
    "$bin" list --project . | tail -1
    ( cd "$work" && "$bin" demo --fresh --quiet | tail -1 )
done

echo "-- the JUnit file, read by a real consumer (junitparser, from PyPI)"
"$work/build/bin/pip" install --quiet junitparser
( cd "$work" && "${installed[0]}" demo --quiet --report "junit=$work/plancheck.xml" >/dev/null )
"$work/build/bin/python" - "$work/plancheck.xml" <<'PY'
import sys
from junitparser import JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
cases = [case for suite in xml for case in suite]
assert len(cases) == 15, len(cases)
assert all(case.time > 0 for case in cases), [case.time for case in cases]
assert all(case.name.endswith("]") and " [" in case.name for case in cases)
assert all(case.is_passed for case in cases)
assert all(suite.timestamp for suite in xml)
print(f"junitparser: {len(list(xml))} suites, {len(cases)} testcases, every one timed and passed")
PY

echo "-- the GitHub Action and the GitLab CI template, installing this wheel"
bash .ci/templates-check.sh "$work"/dist/plancheck-*.whl
