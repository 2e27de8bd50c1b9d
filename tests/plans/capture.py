#!/usr/bin/env python3
"""Recaptures the EXPLAIN documents the pure verdict tests read (tests/plans/VERDICT/CASE/).

Each case folder holds a case.toml: the read path's SQL and how to capture it (`sql`, optional
`params`, `setup`, `mutation`), and what the pure stage requires of the plan (`index`,
`table`, `allow_seq_scan`). This script starts a throwaway server from PLANCHECK_PG_BIN, loads
the reference board at scale 0.05 with the plancheck binary, and for every case writes
LABEL.custom.json (and LABEL.generic.json for a case with params) and LABEL.reltuples.json.

usage: PLANCHECK_PG_BIN=/path/to/bin python3 tests/plans/capture.py pg15
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
    for case_toml in sorted(root.glob("tests/plans/*/*/case.toml")):
        case_dir = case_toml.parent
        case = tomllib.loads(case_toml.read_text())
        db = "c_" + case_dir.name.replace("-", "_")
        subprocess.run(["psql", conn + "postgres", "-qc", f"drop database if exists {db}"], check=True)
        subprocess.run(["psql", conn + "postgres", "-qc", f"create database {db} template board"],
                       check=True)
        if "mutation" in case:
            subprocess.run(["psql", conn + db, "-qc", case["mutation"]], check=True)
        project = pathlib.Path(tempfile.mkdtemp())
        (project / "plans").mkdir()
        (project / "expectations").mkdir()
        (project / "plans" / "case.sql").write_text(case["sql"])
        expectation = ""
        if "params" in case:
            expectation += "params = " + json.dumps(case["params"]) + "\n"
        # Any index that exists will do: only the saved plans matter here.
        expectation += "[scopes.capture]\nindex = \"posts_pkey\"\n"
        if "setup" in case:
            expectation += "setup = " + json.dumps(case["setup"]) + "\n"
        (project / "expectations" / "case.toml").write_text(expectation)
        out = project / "out"
        subprocess.run([plancheck, "check", "--database-url", conn + db, "--project", project,
                        "--warmup", "1", "--iterations", "1", "--save-plans", out],
                       stdout=subprocess.DEVNULL)
        for kind in ["custom", "generic"]:
            saved = out / f"case.capture.{kind}.json"
            if saved.exists():
                shutil.copy(saved, case_dir / f"{label}.{kind}.json")
        rows = subprocess.run(
            ["psql", conn + db, "-Atc",
             "select n.nspname || '.' || c.relname, c.reltuples from pg_class c "
             "join pg_namespace n on n.oid = c.relnamespace "
             "where c.relkind = 'r' and n.nspname = 'public'"],
            check=True, capture_output=True, text=True).stdout.split()
        tuples = {r.split("|")[0]: float(r.split("|")[1]) for r in rows}
        (case_dir / f"{label}.reltuples.json").write_text(json.dumps(tuples, indent=1, sort_keys=True) + "\n")
        print(f"{label}: {case_dir.relative_to(root)}")
finally:
    server.terminate()
    server.wait()
    shutil.rmtree(work, ignore_errors=True)
