#!/usr/bin/env python3
"""How fast `plancheck capture` reads a statement log, and in how much memory.

    bench/capture [--seconds S] [--clients N] [--gigabyte] [--keep DIR] [--compare BIN]

Starts a throwaway PostgreSQL logging every statement (log_min_duration_statement = 0) as csvlog,
jsonlog (PostgreSQL 15 and later) and stderr at once, runs `pgbench -M prepared` traffic for
--seconds (default 60) with --clients (default 2), then times

    plancheck capture --log FILE --database-url URL --project EMPTY --dry-run -q

on each of the three logs: wall time, MB/s, CPU time and peak RSS (GNU time). With --gigabyte the
csvlog is also concatenated with itself to at least 1 GB and read again, to see that memory stays
flat in the log's size. pgBadger, when installed, reads the same csvlog, side by side.

PLANCHECK_BENCH_BIN=/path/to/plancheck measures another build (an older commit); --compare BIN
measures BIN too, on the same logs, a row each after this build's; PLANCHECK_PG_BIN picks the
server, as bench/run does.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import bench  # noqa: E402  (the server helpers bench/run uses)

PORT = bench.PORT


def gnu_time(cmd):
    """(wall seconds, user+sys CPU seconds, peak RSS in MB) of cmd, which must succeed."""
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M"] + cmd,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    if out.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{out.stderr}")
    wall, user, system, rss_kb = out.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), int(rss_kb) / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--gigabyte", action="store_true")
    parser.add_argument("--keep", help="keep the logs in this folder")
    parser.add_argument("--compare", help="another plancheck build to measure on the same logs")
    args = parser.parse_args()
    binary = os.environ.get("PLANCHECK_BENCH_BIN", "target/release/plancheck")
    bin_dir = bench.pg_bin()
    tmp = tempfile.mkdtemp(prefix="plancheck-capture-bench-")
    major = int(subprocess.run([f"{bin_dir}/postgres", "--version"], capture_output=True,
                               text=True, check=True).stdout.split()[2].split(".")[0])
    destinations = "stderr,csvlog" + (",jsonlog" if major >= 15 else "")
    # Later -c options win over the helper's own.
    server = bench.Server(bin_dir, tmp, [f"-c log_destination={destinations}",
                                         "-c log_filename=traffic",
                                         "-c log_line_prefix='%m [%p] '"])
    try:
        server.psql("postgres", "CREATE DATABASE pgbench")
        subprocess.run([f"{bin_dir}/pgbench", "-i", "-q", "-s", "1", server.url("pgbench")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Statements are logged from here on only; what came before is a few lines.
        logs = {
            "csvlog": os.path.join(server.log_dir, "traffic.csv"),
            "stderr": os.path.join(server.log_dir, "traffic"),
        }
        if major >= 15:
            logs["jsonlog"] = os.path.join(server.log_dir, "traffic.json")
        server.logging(True)
        subprocess.run([f"{bin_dir}/pgbench", "-M", "prepared", "-c", str(args.clients),
                        "-j", str(args.clients), "-T", str(args.seconds), "-n",
                        server.url("pgbench")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server.logging(False)
        time.sleep(1.0)
        missing = [p for p in logs.values() if not os.path.exists(p)]
        if missing:
            sys.exit(f"bench: no log {missing}; the log folder holds {os.listdir(server.log_dir)}")
        project = os.path.join(tmp, "project")
        os.makedirs(project)
        print(f"pgbench -M prepared, {args.clients} clients, {args.seconds} s, "
              f"PostgreSQL {major}; {binary}")
        print(f"{'log':<21} {'size MB':>9} {'wall s':>8} {'MB/s':>8} {'CPU s':>7} {'RSS MB':>8}",
              flush=True)
        runs = list(logs.items())
        if args.gigabyte:
            big = os.path.join(tmp, "big.csv")
            size = os.path.getsize(logs["csvlog"])
            with open(big, "wb") as out:
                for _ in range(max(2, -(-(1 << 30) // max(size, 1)))):
                    with open(logs["csvlog"], "rb") as f:
                        shutil.copyfileobj(f, out, 1 << 20)
            runs.append(("csvlog×N", big))
        builds = [("", binary)] + ([(" (compared)", args.compare)] if args.compare else [])
        for name, path in runs:
            fmt = name.split("×")[0]
            for label, build in builds:
                cmd = [build, "capture", "--log", path, "--log-format", fmt,
                       "--database-url", server.url("pgbench"), "--project", project,
                       "--dry-run", "-q"]
                wall, cpu, rss = gnu_time(cmd)
                mb = os.path.getsize(path) / 1e6
                print(f"{name + label:<21} {mb:>9.1f} {wall:>8.2f} {mb / wall:>8.1f} "
                      f"{cpu:>7.2f} {rss:>8.1f}", flush=True)
        badger = shutil.which("pgbadger")
        if badger:
            out_file = os.path.join(tmp, "badger.html")
            wall, cpu, rss = gnu_time([badger, "-q", "-f", "csv", "-o", out_file, logs["csvlog"]])
            mb = os.path.getsize(logs["csvlog"]) / 1e6
            print(f"{'pgbadger':<21} {mb:>9.1f} {wall:>8.2f} {mb / wall:>8.1f} {cpu:>7.2f} "
                  f"{rss:>8.1f}")
        else:
            print("pgbadger: not installed (apt-get install pgbadger), not compared")
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for path in logs.values():
                shutil.copy(path, args.keep)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
