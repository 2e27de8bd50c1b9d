#!/usr/bin/env python3
"""Recaptures the measurements the pure verdict tests judge (tests/plans/VERDICT/CASE/).

Each case folder holds a case.toml: the read path's SQL and how to capture it (`sql`, optional
`params`, `settings`, `mutation`), and what the expectation requires (`index`,
`allow_seq_scan`). This script starts a throwaway server from PLANCHECK_PG_BIN, loads the
reference board at scale 0.05 with the plancheck binary, and for every case runs `plancheck
check --save-plans` on a copy of the board and keeps the check's measurement as
LABEL.measurement.json: every EXPLAIN document, the re-plans, the catalog facts.

`settings` are planner settings a case needs (`enable_seqscan = off`): a project may not change
them, so they are set on the case's database (`ALTER DATABASE … SET`), where plancheck reads
them as the server's own.

usage: PLANCHECK_PG_BIN=/path/to/bin python3 tests/plans/capture.py pg15 [CASE]
With CASE (`seq-scan/read-inside-a-function-call`), only that case is captured again.
Run as root it starts the server as the postgres user. Needs psql on the PATH.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import tomllib

label = sys.argv[1]
only = sys.argv[2] if len(sys.argv) > 2 else "*/*"
root = pathlib.Path(__file__).resolve().parents[2]
pg_bin = pathlib.Path(os.environ["PLANCHECK_PG_BIN"])
plancheck = root / "target" / "release" / "plancheck"
subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=root, check=True)

work = pathlib.Path(tempfile.mkdtemp(prefix="plancheck-capture-"))
os.chmod(work, 0o755)
as_user = []
if os.geteuid() == 0:
    shutil.chown(work, "postgres")
    as_user = ["runuser", "-u", "postgres", "--"]
subprocess.run(as_user + [pg_bin / "initdb", "-D", work / "data", "-U", "plancheck", "-A", "trust",
                "--no-sync", "--locale=C", "-E", "UTF8"], check=True, capture_output=True)
server = subprocess.Popen(as_user + [pg_bin / "postgres", "-D", work / "data", "-k", work,
                                     "-c", "listen_addresses=", "-c", "fsync=off"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    conn = f"host={work} port=5432 user=plancheck dbname="
    for _ in range(200):
        if subprocess.run(["psql", conn + "postgres", "-c", "select 1"],
                          capture_output=True).returncode == 0:
            break
        import time
        time.sleep(0.05)
    subprocess.run(["psql", conn + "postgres", "-qc", "create database board"], check=True)
    subprocess.run([plancheck, "fixtures", "load", "--database-url", conn + "board",
                    "--scale", "0.05"], check=True, stderr=subprocess.DEVNULL)
    for case_toml in sorted(root.glob(f"tests/plans/{only}/case.toml")):
        case_dir = case_toml.parent
        case = tomllib.loads(case_toml.read_text())
        db = "c_" + case_dir.name.replace("-", "_")
        subprocess.run(["psql", conn + "postgres", "-qc", f"drop database if exists {db}"], check=True)
        subprocess.run(["psql", conn + "postgres", "-qc", f"create database {db} template board"],
                       check=True)
        if "mutation" in case:
            subprocess.run(["psql", conn + db, "-qc", case["mutation"]], check=True)
        for name, value in case.get("settings", {}).items():
            subprocess.run(["psql", conn + db, "-qc",
                            f"alter database {db} set {name} = '{value}'"], check=True)
        project = pathlib.Path(tempfile.mkdtemp())
        (project / "plans").mkdir()
        (project / "expectations").mkdir()
        (project / "plans" / "case.sql").write_text(case["sql"])
        expectation = ""
        if "params" in case:
            expectation += "params = " + json.dumps(case["params"]) + "\n"
        if "allow_seq_scan" in case:
            expectation += "allow_seq_scan = " + json.dumps(case["allow_seq_scan"]) + "\n"
        expectation += "[scopes.capture]\nindex = " + json.dumps(case["index"]) + "\n"
        (project / "expectations" / "case.toml").write_text(expectation)
        out = project / "out"
        subprocess.run([plancheck, "check", "--database-url", conn + db, "--project", project,
                        "--warmup", "1", "--iterations", "1", "--save-plans", out],
                       stdout=subprocess.DEVNULL)
        shutil.copy(out / "case.capture.json", case_dir / f"{label}.measurement.json")
        print(f"{label}: {case_dir.relative_to(root)}")
finally:
    server.terminate()
    server.wait()
    shutil.rmtree(work, ignore_errors=True)
