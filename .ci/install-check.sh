#!/usr/bin/env bash
# Installing without building in place: the release's artifacts for this machine, as
# .ci/release-build.sh writes them (or from DIST, a folder it wrote), each installed into a clean
# place and run from there: the Python wheel into a clean virtualenv, the .tar.gz unpacked, the npm
# packages (the launcher and the platform's binary) into a clean folder, run with `npx` from there
# as a user runs them; and `cargo install --locked` into a root of its own. Each is run: its
# version, `list` on the reference project, and the demo (a throwaway PostgreSQL, every check
# passing). Then the GitHub Action and the GitLab template, with this folder's artifacts
# (.ci/templates-check.sh DIST).
#
#   .ci/install-check.sh [DIST]
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
version=$(sed -n '/^\[package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
target=$(rustc -vV | sed -n 's/^host: //p')

if [ $# -ge 1 ]; then
    dist=$(cd "$1" && pwd)
else
    echo "-- the release's artifacts (.ci/release-build.sh)"
    dist="$work/dist"
    bash .ci/release-build.sh "$dist" >"$work/release-build.log" 2>&1 \
        || { cat "$work/release-build.log" >&2; exit 1; }
fi
echo "-- their checksums"
( cd "$dist" && sha256sum -c SHA256SUMS )

echo "-- the wheel"
python3 -m venv "$work/build"
python3 -m venv "$work/clean"
"$work/clean/bin/pip" install --quiet --no-index "$dist"/plancheck-"$version"-*.whl
installed=("$work/clean/bin/plancheck")

echo "-- the .tar.gz"
mkdir "$work/tar"
tar -C "$work/tar" -xzf "$dist/plancheck-$version-$target.tar.gz"
installed+=("$work/tar/plancheck-$version-$target/plancheck")

echo "-- the npm packages"
mkdir -p "$work/node"
( cd "$work/node" && npm init -y >/dev/null \
    && npm install --silent --no-audit --no-fund --offline \
        "$dist"/plancheck-linux-x64-"$version".tgz "$dist/plancheck-$version.tgz" )
# Run as a user runs it: `npx plancheck` in the folder it was installed into, never looking it
# up in the registry (--no-install), through the launcher to the platform package's binary.
cat > "$work/npx-plancheck" <<SH
#!/bin/sh
cd '$work/node' && exec npx --no-install plancheck "\$@"
SH
chmod 755 "$work/npx-plancheck"
installed+=("$work/npx-plancheck")

echo "-- cargo install --locked"
# The repository's own target folder: the GitHub Action's default install (.ci/templates-check.sh)
# then finds this build.
cargo install --locked --quiet --path . --root "$work/cargo"
installed+=("$work/cargo/bin/plancheck")

for bin in "${installed[@]}"; do
    said=$("$bin" --version)
    echo "$said"
    [ "$said" = "plancheck $version" ] || { echo "$bin says '$said', not plancheck $version" >&2; exit 1; }
    "$bin" list --project "$PWD" | tail -1
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

echo "-- the GitHub Action and the GitLab CI template, installing this release's artifacts"
bash .ci/templates-check.sh "$dist"
