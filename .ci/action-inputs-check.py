"""The GitHub Action's `plancheck check` step and its server binaries step (action.yml) run by
bash as a runner runs them, with
hostile inputs, a stand-in plancheck that records its arguments, and $GITHUB_OUTPUT read back as
GitHub reads it: no input may add an output of its own (a line break in `report-dir` once added
`junit=/tmp/x`), and `args` are split into words, never evaluated, never cut at a line break.

    python3 .ci/action-inputs-check.py action.yml

Needs PyYAML and bash. Exits 1 naming every case that failed.
"""

import os
import re
import subprocess
import sys
import tempfile

import yaml

action = yaml.safe_load(open(sys.argv[1]))
steps = {s["id"]: s for s in action["runs"]["steps"] if "id" in s}
for step in steps.values():
    assert "${{" not in step.get("run", ""), f"an expression inside {step['id']}'s script"
# The server binaries' step's output as the check step reads it (given per case).
STEP_OUTPUT = "steps.binaries.outputs.bin"
defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}


def outputs_of(text):
    """$GITHUB_OUTPUT as GitHub reads it: `name=value` lines and `name<<DELIMITER` blocks."""
    found, lines = [], text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            while i < len(lines) and lines[i] != delimiter:
                value.append(lines[i])
                i += 1
            assert i < len(lines), f"no closing delimiter for {name}"
            i += 1
            found.append((name, "\n".join(value)))
        else:
            name, value = line.split("=", 1)
            found.append((name, value))
    return found


def run(step_id="check", binaries_output="", **given):
    """Runs the step `step_id` with these inputs (and the binaries step's output as given): its
    exit status, its outputs, the stand-in's arguments (None when it was not run), and the work
    folder. The stand-in answers `scratch-binaries` as plancheck would on a PostgreSQL 17
    server: the folder PLANCHECK_PG_BIN names, if any; and records PLANCHECK_PG_BIN in pg_bin."""
    step = steps[step_id]
    inputs = dict(defaults, **given)
    work = tempfile.mkdtemp()
    home = os.path.join(work, "home")
    bin_dir = os.path.join(home, ".plancheck-action", "bin")
    os.makedirs(bin_dir)
    argv_file = os.path.join(work, "argv")
    stand_in = os.path.join(bin_dir, "plancheck")
    with open(stand_in, "w") as f:
        f.write(
            "#!/usr/bin/env python3\nimport os, sys\n"
            "if sys.argv[1:] == ['scratch-binaries']:\n"
            "    print('major=17'); print('bin=' + os.environ.get('PLANCHECK_PG_BIN', ''))\n"
            "    sys.exit(0)\n"
            f'open({argv_file!r}, "w").write("\\0".join(sys.argv[1:]))\n'
            f'open({argv_file!r} + ".pg_bin", "w").write(os.environ.get("PLANCHECK_PG_BIN", "(unset)"))\n'
        )
    os.chmod(stand_in, 0o755)
    output = os.path.join(work, "github_output")
    open(output, "w").close()
    repo = os.path.join(work, "repo")
    os.makedirs(repo)

    def expand(text):
        def one(m):
            if m.group(1).strip() == STEP_OUTPUT:
                return binaries_output
            name = re.fullmatch(r"inputs\.([\w-]+)", m.group(1).strip())
            assert name, f"an expression this check cannot evaluate: {m.group(1)}"
            return inputs[name.group(1)]

        return re.sub(r"\$\{\{(.*?)\}\}", one, text)

    env = dict(
        os.environ,
        HOME=home,
        GITHUB_OUTPUT=output,
        GITHUB_ACTIONS="true",
        GITHUB_ACTION_PATH=os.path.dirname(os.path.abspath(sys.argv[1])),
        # As a runner's PATH would be had an earlier step added the install to it.
        PATH=bin_dir + os.pathsep + os.environ["PATH"],
    )
    # A job that sets no PLANCHECK_PG_BIN of its own: what the step gives is all there is.
    env.pop("PLANCHECK_PG_BIN", None)
    env.update({k: expand(str(v)) for k, v in step.get("env", {}).items()})
    # How GitHub runs a `shell: bash` step.
    status = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=repo,
        env=env,
        stderr=subprocess.DEVNULL,
    ).returncode
    argv = open(argv_file).read().split("\0") if os.path.exists(argv_file) else None
    return status, outputs_of(open(output).read()), argv, work


failures = []


def case(name, ok, detail):
    print(f"{'ok' if ok else 'FAILED'}: {name}")
    if not ok:
        failures.append(f"{name}: {detail}")


# A line break in report-dir: refused before anything is written or run.
status, outputs, argv, work = run(**{"report-dir": "out\njunit=/tmp/x"})
case(
    "report-dir with a line break adds no output",
    all(value != "/tmp/x" and not value.startswith("/tmp/x") for _, value in outputs)
    and len(outputs) <= 1,
    f"outputs {outputs}",
)
case("report-dir with a line break is refused", status != 0 and argv is None, f"exit {status}, plancheck ran: {argv}")

# A carriage return too (GitHub's file commands split lines at \r\n as well).
status, outputs, argv, _ = run(**{"report-dir": "out\r\njunit=/tmp/x"})
case("report-dir with a carriage return is refused", status != 0 and len(outputs) == 0, f"exit {status}, outputs {outputs}")

# The plain case: one output, the report's path.
status, outputs, argv, work = run()
case(
    "the default report-dir gives one output, junit",
    status == 0 and outputs == [("junit", "plancheck-out/plancheck.xml")],
    f"exit {status}, outputs {outputs}",
)
case(
    "plancheck gets the project and the report",
    argv == ["check", "--project", ".", "--report", "junit=plancheck-out/plancheck.xml"],
    f"argv {argv}",
)

# A report-dir that looks like the delimiter form.
status, outputs, argv, _ = run(**{"report-dir": "EOF"})
case(
    "a report-dir like a delimiter is one output",
    status == 0 and outputs == [("junit", "EOF/plancheck.xml")],
    f"exit {status}, outputs {outputs}",
)

# args: split into words at blanks and line breaks, none evaluated or dropped.
marker = os.path.join(tempfile.mkdtemp(), "evaluated")
status, outputs, argv, _ = run(
    args=f"--require usable\n--strict-role\t--quiet $(touch {marker}) `touch {marker}` ;touch"
)
case(
    "args are split into words, never evaluated, none dropped at a line break",
    status == 0
    and argv is not None
    and argv[5:]
    == ["--require", "usable", "--strict-role", "--quiet", f"$(touch", f"{marker})", "`touch", f"{marker}`", ";touch"]
    and not os.path.exists(marker),
    f"exit {status}, argv {argv}",
)

# A database URL reaches plancheck as DATABASE_URL, not on the command line.
status, outputs, argv, _ = run(**{"database-url": "postgresql://u:secret@h/db'; touch x"})
case(
    "the database URL is not on plancheck's command line",
    status == 0 and argv is not None and not any("secret" in a for a in argv),
    f"argv {argv}",
)

# The server binaries' folder reaches plancheck as PLANCHECK_PG_BIN, as it was given.
status, outputs, argv, work = run(binaries_output="/opt/pg 17/bin")
pg_bin = open(os.path.join(work, "argv.pg_bin")).read() if argv is not None else None
case(
    "the binaries step's folder is plancheck's PLANCHECK_PG_BIN",
    status == 0 and pg_bin == "/opt/pg 17/bin",
    f"exit {status}, PLANCHECK_PG_BIN {pg_bin!r}",
)
status, outputs, argv, work = run()
pg_bin = open(os.path.join(work, "argv.pg_bin")).read() if argv is not None else None
case(
    "no folder from the binaries step leaves PLANCHECK_PG_BIN unset",
    status == 0 and pg_bin == "(unset)",
    f"exit {status}, PLANCHECK_PG_BIN {pg_bin!r}",
)

# The binaries step: server-binaries off gives an empty folder and nothing else.
status, outputs, argv, _ = run("binaries", **{"server-binaries": "off"})
case(
    "server-binaries off: one output, empty",
    status == 0 and outputs == [("bin", "")],
    f"exit {status}, outputs {outputs}",
)
# A folder of one's own, with shell in it: passed on as written, never evaluated.
marker = os.path.join(tempfile.mkdtemp(), "evaluated")
given = f"/x/$(touch {marker})/`touch {marker}`"
status, outputs, argv, _ = run("binaries", **{"server-binaries": given})
case(
    "server-binaries is a folder, never evaluated",
    status == 0 and outputs == [("bin", given)] and not os.path.exists(marker),
    f"exit {status}, outputs {outputs}",
)
# A line break in it adds no output of its own.
status, outputs, argv, _ = run("binaries", **{"server-binaries": "/x\nbin=/evil"})
case(
    "server-binaries with a line break adds no output",
    status != 0 and all("/evil" not in value for _, value in outputs),
    f"exit {status}, outputs {outputs}",
)

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("the action's check step: no input adds an output or reaches the shell as code")
