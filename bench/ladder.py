"""plancheck ladder, checked against what a PostgreSQL user would run instead: pgbench --rate.

Run through bench/ladder, which builds the release binary first. On one throwaway server, in one
run, it prints:

1. The generator's ceiling: against `SELECT 1`, each rate's lateness p95 of the ladder and
   pgbench's schedule lag p95 (`-c 3 -R RATE`, the same pool), and the highest rate at which
   each stays under 1 ms.
2. Side by side at two rates, one under the shoulder and one past it, on a page that takes
   10 ms (3 sessions serve about 300 a second): p50/p95 latency and lateness/lag of both tools.
   Under the shoulder they agree within noise; past it both show the queue.
3. Open-loop against closed-loop: one session, a page of 50 ms (it serves 20 a second), offered
   30 a second. The ladder's p95 grows with the queue; a request-then-sleep loop (pgbench
   without --rate, `\\sleep` after each request, what a closed-loop load test does) reports the
   single-read time and quietly offers less.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import PLANCHECK, PORT, Server, pg_bin  # noqa: E402

SELECT_ONE = "SELECT 1"
TEN_MS = "SELECT pg_catalog.pg_sleep(0.01)"
FIFTY_MS = "SELECT pg_catalog.pg_sleep(0.05)"


def project(dest, sql):
    """A project of one read path running `sql` (its required index is never used by the ladder;
    the catalog's own keeps the expectation valid)."""
    os.makedirs(os.path.join(dest, "plans"))
    os.makedirs(os.path.join(dest, "expectations"))
    with open(os.path.join(dest, "plans", "page.sql"), "w") as f:
        f.write(sql + "\n")
    with open(os.path.join(dest, "expectations", "page.toml"), "w") as f:
        f.write('[scopes.member]\nindex = "pg_class_oid_index"\n')
    return dest


def ladder(server, proj, rates, pool=3, seconds=10, warmup=2):
    out = subprocess.run(
        [PLANCHECK, "ladder", "--database-url", server.url("postgres"), "--project", proj,
         "--pool", str(pool), "--rates", ",".join(str(r) for r in rates),
         "--warmup-seconds", str(warmup), "--rung-seconds", str(seconds),
         "--min-requests", "50", "--max-rate", "100000", "--format", "json", "-q"],
        capture_output=True, text=True,
    )
    if out.returncode not in (0, 1):
        sys.exit(f"bench: ladder failed ({out.returncode}): {out.stderr}")
    return json.loads(out.stdout)["rungs"]


def pgbench(server, tmp, sql, rate=None, clients=3, seconds=10, sleep_ms=None):
    """pgbench with a per-transaction log: latency and schedule lag percentiles (ms) and the
    rate it served."""
    script = os.path.join(tmp, "page.sql")
    with open(script, "w") as f:
        f.write(sql + ";\n")
        if sleep_ms:
            f.write(f"\\sleep {sleep_ms} ms\n")
    logs = os.path.join(tmp, "pgbench-logs")
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs)
    cmd = [f"{server.bin}/pgbench", "-n", "-c", str(clients), "-j", "1", "-T", str(seconds),
           "-f", script, "-l", "--log-prefix", os.path.join(logs, "tx"),
           "-h", server.tmp, "-p", str(PORT), "-U", "postgres", "postgres"]
    if rate:
        cmd[1:1] = ["-R", str(rate)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    latency, lag, count = [], [], 0
    for name in os.listdir(logs):
        with open(os.path.join(logs, name)) as f:
            for line in f:
                parts = line.split()
                # client tx_no time_us script_no epoch epoch_us [lag_us]
                latency.append(int(parts[2]) / 1000.0)
                if len(parts) > 6:
                    lag.append(int(parts[6]) / 1000.0)
                count += 1
    return {
        "served": count / seconds,
        "p50_ms": pct(latency, 0.50),
        "p95_ms": pct(latency, 0.95),
        "lag_p95_ms": pct(lag, 0.95) if lag else None,
    }


def pct(values, q):
    if not values:
        return None
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(-(-q * len(s) // 1)) - 1))]


def fmt(v):
    return "-" if v is None else f"{v:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=10, help="each rung's measured window")
    parser.add_argument("--rates", default="250,500,1000,2000,4000,6000,8000",
                        help="the generator-ceiling rates against SELECT 1")
    parser.add_argument("--parts", default="1,2,3", help="which parts to run")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="plancheck-ladder-bench-")
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres")
    server = Server(pg_bin(), tmp)
    try:
        run(args, server, tmp)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run(args, server, tmp):
    print(f"# plancheck ladder against pgbench --rate ({os.cpu_count()} CPUs, "
          f"{subprocess.run([f'{server.bin}/postgres', '--version'], capture_output=True, text=True).stdout.strip()})")
    parts = {int(p) for p in args.parts.split(",")}
    if 1 in parts:
        ceiling(args, server, tmp)
    if 2 in parts:
        side_by_side(args, server, tmp)
    if 3 in parts:
        closed_loop(args, server, tmp)


def ceiling(args, server, tmp):
    print("\n## 1. The generator's ceiling: SELECT 1, 3 sessions, lateness (ladder) and schedule "
          "lag (pgbench) p95, ms\n")
    print("| Rate | ladder served | ladder late p95 | pgbench served | pgbench lag p95 |")
    print("|---|---|---|---|---|")
    one = project(os.path.join(tmp, "select-one"), SELECT_ONE)
    rates = [int(r) for r in args.rates.split(",")]
    best = {"ladder": 0, "pgbench": 0}
    for rate in rates:
        r = ladder(server, one, [rate], seconds=args.seconds)[0]
        b = pgbench(server, tmp, SELECT_ONE, rate=rate, seconds=args.seconds)
        print(f"| {rate}/s | {r['served']:.0f}/s | {fmt(r['late_p95_ms'])} | "
              f"{b['served']:.0f}/s | {fmt(b['lag_p95_ms'])} |")
        if r["late_p95_ms"] is not None and r["late_p95_ms"] < 1.0 and r["errors"] == 0:
            best["ladder"] = rate
        if b["lag_p95_ms"] is not None and b["lag_p95_ms"] < 1.0:
            best["pgbench"] = rate
    print(f"\nHighest rate with a p95 under 1 ms: ladder {best['ladder']}/s, "
          f"pgbench {best['pgbench']}/s")



def side_by_side(args, server, tmp):
    print("\n## 2. Side by side: a 10 ms page, 3 sessions (they serve about 300/s)\n")
    print("| Rate | tool | served | p50 ms | p95 ms | late / lag p95 ms |")
    print("|---|---|---|---|---|---|")
    ten = project(os.path.join(tmp, "ten-ms"), TEN_MS)
    for rate in (100, 400):
        r = ladder(server, ten, [rate], seconds=args.seconds)[0]
        b = pgbench(server, tmp, TEN_MS, rate=rate, seconds=args.seconds)
        print(f"| {rate}/s | ladder | {r['served']:.0f}/s | {fmt(r['p50_ms'])} | "
              f"{fmt(r['p95_ms'])} | {fmt(r['late_p95_ms'])} |")
        print(f"| {rate}/s | pgbench -R | {b['served']:.0f}/s | {fmt(b['p50_ms'])} | "
              f"{fmt(b['p95_ms'])} | {fmt(b['lag_p95_ms'])} |")
    print("\n(pgbench's latency is from the scheduled start under --rate, as the ladder's is.)")



def closed_loop(args, server, tmp):
    print("\n## 3. Open-loop against closed-loop: one session, a 50 ms page (it serves 20/s), "
          "30/s wanted\n")
    fifty = project(os.path.join(tmp, "fifty-ms"), FIFTY_MS)
    r = ladder(server, fifty, [30], pool=1, seconds=args.seconds, warmup=0)[0]
    # A request-then-sleep loop meant to make 30 a second: 33 ms between requests, after each
    # response.
    b = pgbench(server, tmp, FIFTY_MS, clients=1, seconds=args.seconds, sleep_ms=33)
    # pgbench counts the script's own \\sleep in each transaction's time: take it out, to show
    # what such a loop reports as the read's latency.
    read_p50, read_p95 = b["p50_ms"] - 33, b["p95_ms"] - 33
    print("| | offered | served | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    print(f"| ladder (open-loop) | {r['offered']:.0f}/s | {r['served']:.0f}/s | "
          f"{fmt(r['p50_ms'])} | {fmt(r['p95_ms'])} |")
    print(f"| request-then-sleep (pgbench, no -R, \\sleep 33 ms) | 30/s meant | "
          f"{b['served']:.0f}/s | {fmt(read_p50)} | {fmt(read_p95)} |")
    print("\n(The closed loop's figures are its transactions' time less its own 33 ms sleep: "
          "the single read's time, while it served well under what it meant to offer.)")


if __name__ == "__main__":
    main()
