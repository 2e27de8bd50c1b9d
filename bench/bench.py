"""plancheck's benchmark: a thousand checks measured against the server's own statement time.

Run through bench/run, which builds the release binary first. Everything is measured side by
side in one run on one throwaway server, so the ratios are what to read (BENCHMARKS.md).
"""

import argparse
import csv
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

import floor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# PLANCHECK_BENCH_BIN measures another build (an older commit's, side by side with this one).
PLANCHECK = os.environ.get("PLANCHECK_BENCH_BIN") or os.path.join(ROOT, "target", "release",
                                                                 "plancheck")
PORT = 5431
WARMUP, ITERATIONS = 1, 3

# csvlog columns (PostgreSQL 13-18 share these positions).
MESSAGE, APPLICATION = 13, 22
DURATION = re.compile(
    r"duration: ([0-9.]+) ms  (?:statement|parse|bind|execute)[^:]*: (.*)", re.S
)


def pg_bin():
    given = os.environ.get("PLANCHECK_PG_BIN")
    if given:
        return given
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[-3]),
    )
    if not found:
        sys.exit("bench: no PostgreSQL server found; set PLANCHECK_PG_BIN")
    return os.path.dirname(found[-1])


def as_server_owner(cmd):
    """PostgreSQL refuses to run as root: run its programs as the postgres user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + cmd
    return cmd


class Server:
    def __init__(self, bin_dir, tmp, extra=()):
        self.bin, self.tmp = bin_dir, tmp
        self.data = os.path.join(tmp, "data")
        self.log_dir = os.path.join(tmp, "log")
        os.makedirs(self.log_dir)
        if os.geteuid() == 0:
            shutil.chown(tmp, "postgres")
            shutil.chown(self.log_dir, "postgres")
        subprocess.run(
            as_server_owner(
                [f"{bin_dir}/initdb", "-D", self.data, "-U", "postgres",
                 "--auth=trust", "--no-sync", "-E", "UTF8"]
            ),
            check=True, stdout=subprocess.DEVNULL,
        )
        # The embedded default's settings (src/db/ephemeral.rs), plus every statement's duration
        # in a csvlog.
        options = " ".join([
            "-c listen_addresses=''", f"-k {tmp}", f"-p {PORT}",
            "-c fsync=off", "-c full_page_writes=off", "-c synchronous_commit=off",
            "-c max_wal_size=4GB", "-c maintenance_work_mem=512MB",
            "-c shared_buffers=256MB", "-c max_connections=30",
            "-c logging_collector=on", "-c log_destination=csvlog",
            f"-c log_directory={self.log_dir}", "-c log_filename=bench",
        ] + list(extra))
        subprocess.run(
            as_server_owner([f"{bin_dir}/pg_ctl", "-D", self.data, "-o", options,
                             "-l", os.path.join(tmp, "server.out"), "-w", "start"]),
            check=True, stdout=subprocess.DEVNULL,
        )
        self.log = os.path.join(self.log_dir, "bench.csv")

    def url(self, db):
        return f"host={self.tmp} port={PORT} user=postgres dbname={db}"

    def psql(self, db, sql):
        subprocess.run(
            [f"{self.bin}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.url(db),
             "-c", sql],
            check=True, stdout=subprocess.DEVNULL,
        )

    def logging(self, on):
        """Every statement's duration logged, or nothing: wall times are taken with logging
        off (writing the log costs the server time no statement's duration shows)."""
        value = "0" if on else "-1"
        self.psql("postgres", f"ALTER SYSTEM SET log_min_duration_statement = {value}")
        self.psql("postgres", "SELECT pg_reload_conf()")
        time.sleep(0.2)

    def log_size(self):
        """The log's size once the collector has written everything it was sent."""
        size = -1
        while True:
            time.sleep(0.3)
            now = os.path.getsize(self.log)
            if now == size:
                return now
            size = now

    def stop(self):
        subprocess.run(
            as_server_owner([f"{self.bin}/pg_ctl", "-D", self.data, "-m", "fast", "stop"]),
            stdout=subprocess.DEVNULL,
        )


def server_time(log, start, end, application):
    """Σ server milliseconds of what `application` sent in log[start:end]: EXPLAIN (ANALYZE …)
    runs, other EXPLAINs (generic plan, re-plans), everything else; and the statement count.
    Read as a stream: the log of a thousand checks is hundreds of megabytes."""
    sums = {"analyze": 0.0, "explain": 0.0, "other": 0.0}
    statements = 0
    def lines(f):
        at = start
        for line in f:
            at += len(line)
            if at > end:
                return
            yield line.decode()

    with open(log, "rb") as f:
        f.seek(start)
        for row in csv.reader(lines(f)):
            if len(row) <= APPLICATION or row[APPLICATION] != application:
                continue
            m = DURATION.match(row[MESSAGE])
            if not m:
                continue
            ms, sql = float(m.group(1)), m.group(2).lstrip().upper()
            if sql.startswith("EXPLAIN (ANALYZE"):
                sums["analyze"] += ms
            elif sql.startswith("EXPLAIN"):
                sums["explain"] += ms
            else:
                sums["other"] += ms
            if "  parse " not in row[MESSAGE] and "  bind " not in row[MESSAGE]:
                statements += 1
    return {k: v / 1000 for k, v in sums.items()}, statements


def timed(cmd, env=None, stdout=subprocess.DEVNULL, stderr=None):
    """Wall seconds, peak RSS in MB, exit status and CPU seconds (user + system) of one process.
    The RSS is GNU time's where it is installed: a child forked from this script would count
    the script's pages. The CPU is the child's with what it waited for (GNU time's own is a
    few milliseconds)."""
    rss_file = tempfile.NamedTemporaryFile(suffix=".rss")
    if os.path.exists("/usr/bin/time"):
        cmd = ["/usr/bin/time", "-q", "-f", "%M", "-o", rss_file.name] + cmd
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=stderr)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    measured = open(rss_file.name).read().split()
    rss = int(measured[-1]) / 1024 if measured else usage.ru_maxrss / 1024
    return wall, rss, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def expectation_scopes(text):
    return re.findall(r"^\[scopes\.([A-Za-z0-9_-]+)\]", text, re.M)


def build_project(dest, checks):
    """A project of exactly `checks` checks: the reference project's read paths copied as
    NAME-1, NAME-2, …, relative budgets pointing at their own copy; the last copy keeps only as
    many scopes as are still needed."""
    os.makedirs(os.path.join(dest, "plans"))
    os.makedirs(os.path.join(dest, "expectations"))
    shutil.copy(os.path.join(ROOT, "plancheck.toml"), dest)
    names = sorted(p[:-5] for p in os.listdir(os.path.join(ROOT, "expectations")))
    texts = {n: open(os.path.join(ROOT, "expectations", n + ".toml")).read() for n in names}
    # Read paths others are relative to come first, so a truncated copy never points at nothing.
    names.sort(key=lambda n: "relative" in texts[n])
    made, copy = 0, 0
    while made < checks:
        copy += 1
        for name in names:
            if made == checks:
                break
            text = re.sub(r'to = "([^"]+)"', rf'to = "\1-{copy}"', texts[name])
            scopes = expectation_scopes(text)
            if made + len(scopes) > checks:
                keep = checks - made
                cut = [m.start() for m in re.finditer(r"^\[scopes\.", text, re.M)][keep]
                text, scopes = text[:cut], scopes[:keep]
            made += len(scopes)
            shutil.copy(os.path.join(ROOT, "plans", name + ".sql"),
                        os.path.join(dest, "plans", f"{name}-{copy}.sql"))
            with open(os.path.join(dest, "expectations", f"{name}-{copy}.toml"), "w") as f:
                f.write(text)
    return dest


def sql_literal(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def psql_scripts(project, dest):
    """What a user would otherwise write: one psql script per check doing the same EXPLAIN runs
    (warm-up and measured) in a read-only transaction that is rolled back."""
    os.makedirs(dest)
    config = tomllib.load(open(os.path.join(project, "plancheck.toml"), "rb"))
    for path in sorted(glob.glob(os.path.join(project, "expectations", "*.toml"))):
        name = os.path.basename(path)[:-5]
        expectation = tomllib.load(open(path, "rb"))
        sql = open(os.path.join(project, "plans", name + ".sql")).read().strip().rstrip(";")
        params = expectation.get("params", [])
        for scope in expectation.get("scopes", {}):
            fragments = config["scopes"][scope].get("fragments", {})
            text = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: fragments[m.group(1)], sql)
            lines = ["BEGIN READ ONLY;", "SET LOCAL statement_timeout = '30s';"]
            if params:
                lines.append(f"PREPARE q AS {text};")
                run = "EXECUTE q(" + ", ".join(sql_literal(p) for p in params) + ")"
            else:
                run = text
            lines += [f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {run};"] * (WARMUP + ITERATIONS)
            lines.append("ROLLBACK;")
            with open(os.path.join(dest, f"{name}.{scope}.sql"), "w") as f:
                f.write("\n".join(lines) + "\n")


def floor_of(server, project, checks, tmp, db="board"):
    """The floor of plancheck's exchange (bench/floor.py): the bytes of a `--jobs 1` run,
    replayed with logging on (for the server's time) and off (for the wall). None without
    strace, or when it captured nothing."""
    cmd = [PLANCHECK, "check", "--project", project, "--database-url", server.url(db),
           "--jobs", "1", "--warmup", str(WARMUP), "--iterations", str(ITERATIONS),
           "--format", "json", "--quiet"]
    streams = floor.capture(cmd, os.path.join(tmp, "sendto.txt"))
    if streams is None:
        return None
    where = floor.socket_file(server.tmp, PORT)
    client = "C"

    def replay():
        nonlocal client
        answer = floor.replay_c(where, "postgres", db, streams, "plancheck-floor", tmp)
        if answer is None:
            client = "Python (no C compiler)"
            answer = floor.replay(where, "postgres", db, streams, "plancheck-floor")
        return answer

    server.logging(True)
    start = server.log_size()
    logged_wall, cpu = replay()
    sums, _ = server_time(server.log, start, server.log_size(), "plancheck-floor")
    server.logging(False)
    wall, _ = replay()
    round_trips = sum(1 for s in streams for data in s if floor.answers_awaited(data))
    return {"wall": wall, "logged_wall": logged_wall, "server": sum(sums.values()),
            "round_trips": round_trips, "cpu": cpu, "client": client}


def check(server, project, jobs, checks, db="board"):
    """`plancheck check`, twice: with every statement logged, for the server's time of what it
    sent; then with logging off, for the wall time and peak RSS."""
    out = os.path.join(server.tmp, f"report-{checks}-{jobs}.json")
    cmd = [PLANCHECK, "check", "--project", project, "--database-url", server.url(db),
           "--jobs", str(jobs), "--warmup", str(WARMUP), "--iterations", str(ITERATIONS),
           "--format", "json", "--quiet"]
    server.logging(True)
    start = server.log_size()
    logged_wall, _, _, logged_cpu = timed(cmd, stderr=subprocess.DEVNULL)
    sums, statements = server_time(server.log, start, server.log_size(), "plancheck")
    server.logging(False)
    with open(out, "w") as f:
        wall, rss, status, cpu = timed(cmd, stdout=f, stderr=subprocess.DEVNULL)
    results = json.load(open(out))["checks"]
    if status not in (0, 1) or len(results) != checks:
        sys.exit(f"bench: plancheck exited {status} with {len(results)} results of {checks}")
    passed = sum(r["verdict"] == "pass" for r in results)
    return {"wall": wall, "rss": rss, "passed": passed, "statements": statements, "cpu": cpu,
            "logged_wall": logged_wall, "logged_cpu": logged_cpu, **sums}


def psql_loop(server, scripts, db="board"):
    """The psql loop, as `check` is measured: logged, then timed with logging off."""
    loop = (f'for f in "{scripts}"/*.sql; do '
            f'"{server.bin}/psql" -X -q -v ON_ERROR_STOP=1 -d "{server.url(db)}" -f "$f" '
            f">/dev/null || exit 1; done")
    server.logging(True)
    start = server.log_size()
    timed(["bash", "-c", loop])
    sums, statements = server_time(server.log, start, server.log_size(), "psql")
    server.logging(False)
    wall, rss, status, _ = timed(["bash", "-c", loop])
    if status != 0:
        sys.exit("bench: the psql loop failed")
    return {"wall": wall, "rss": rss, "statements": statements, **sums}


def first_table_line(env):
    """Seconds from starting `plancheck demo` to the first line of its table."""
    start = time.monotonic()
    proc = subprocess.Popen([PLANCHECK, "demo", "--quiet"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    proc.stdout.readline()
    first = time.monotonic() - start
    proc.stdout.read()
    proc.wait()
    return first, time.monotonic() - start


def verdict(ok):
    return "ok" if ok else "MISSED"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checks", type=int, default=1000)
    parser.add_argument("--scale", type=float, default=0.05)
    parser.add_argument("--skip-full-board", action="store_true",
                        help="do not time loading the full board (--scale 1)")
    args = parser.parse_args()
    bin_dir = pg_bin()
    tmp = tempfile.mkdtemp(prefix="plancheck-bench-")
    os.chmod(tmp, 0o755)
    server = Server(bin_dir, tmp)
    try:
        run(args, server, bin_dir, tmp)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run(args, server, bin_dir, tmp):
    version = subprocess.run([f"{bin_dir}/postgres", "--version"], capture_output=True,
                             text=True).stdout.strip()
    print(f"plancheck benchmark: {version}, {os.cpu_count()} CPUs, "
          f"board at scale {args.scale}, --warmup {WARMUP} --iterations {ITERATIONS}")
    server.psql("postgres", "CREATE DATABASE board")
    load_wall, _, status, _ = timed([PLANCHECK, "fixtures", "load", "--database-url",
                                  server.url("board"), "--scale", str(args.scale)],
                                 stderr=subprocess.DEVNULL)
    if status != 0:
        sys.exit("bench: loading the board failed")
    print(f"  board loaded in {load_wall:.1f} s")

    n = args.checks
    small = min(100, n)
    big_project = build_project(os.path.join(tmp, f"project-{n}"), n)
    small_project = (big_project if small == n
                     else build_project(os.path.join(tmp, f"project-{small}"), small))
    check(server, small_project, 1, small)  # caches warm before anything is timed
    one = check(server, big_project, 1, n)
    two = check(server, big_project, 2, n)
    rss_small = check(server, small_project, 1, small)["rss"]
    bottom = floor_of(server, big_project, n, tmp)
    scripts = os.path.join(tmp, "psql-loop")
    psql_scripts(big_project, scripts)
    loop = psql_loop(server, scripts)

    explain = one["analyze"] + one["explain"]
    print(f"\n{n} checks (passed {one['passed']}), --jobs 1:")
    print(f"  wall (server logging off)            {one['wall']:8.2f} s")
    print(f"  Σ server time, EXPLAIN (ANALYZE) runs {one['analyze']:7.2f} s")
    print(f"  Σ server time, other EXPLAINs        {one['explain']:8.2f} s   "
          "(generic plan, re-plans)")
    print(f"  Σ server time, everything else       {one['other']:8.2f} s   "
          f"({one['statements']} statements in all)")
    print(f"  wall ÷ Σ EXPLAIN                     {one['wall'] / explain:8.2f}    "
          f"target ≤ 1.25  {verdict(one['wall'] <= 1.25 * explain)}")
    print(f"  everything else ÷ Σ EXPLAIN          {one['other'] / explain:8.1%}    "
          f"target ≤ 15 %  {verdict(one['other'] <= 0.15 * explain)}")
    # What plancheck itself costs beyond every statement's server time: its own CPU and the
    # waits between round trips.
    server_all = explain + one["other"]
    print(f"  wall ÷ Σ all server time             {one['wall'] / server_all:8.2f}    "
          f"target ≤ 1.25  {verdict(one['wall'] <= 1.25 * server_all)}")
    print(f"  wall − Σ all server time, per check  {(one['wall'] - server_all) / n * 1000:8.2f} ms")
    # The wall above and the server's time come from two runs (the log costs the server time);
    # the same ratio within the logged run, whose wall pays for the log too (an upper bound).
    print(f"  the same, both from the logged run   {one['logged_wall'] / server_all:8.2f}    "
          f"({(one['logged_wall'] - server_all) / n * 1000:.2f} ms a check)")
    print(f"  plancheck's own CPU (user + system)  {one['cpu']:8.2f} s   "
          f"({one['cpu'] / n * 1000:.2f} ms a check)")
    if bottom is None:
        print("  the floor of the same exchange       not measured (no strace, or it saw nothing)")
    else:
        print(f"  the floor: the same bytes replayed   {bottom['wall'] / bottom['server']:8.2f}    "
              f"(both from the logged replay: {bottom['logged_wall'] / bottom['server']:.2f}, "
              f"{(bottom['logged_wall'] - bottom['server']) / n * 1000:.2f} ms a check)")
        print(f"    by a client that does no work ({bottom['client']}, "
              f"{bottom['round_trips'] / n:.1f} round trips a check, its own CPU "
              f"{bottom['cpu'] / n * 1000:.2f} ms a check): what the round trips alone cost here")
    speedup = one["wall"] / two["wall"]
    print(f"--jobs 2: wall {two['wall']:.2f} s, speed-up {speedup:.2f}×   "
          f"target ≥ 1.8×  {verdict(speedup >= 1.8)}")
    print(f"peak RSS: {rss_small:.0f} MB at {small} checks, {one['rss']:.0f} MB at {n}   "
          f"target ≤ 100 MB, flat  {verdict(one['rss'] <= 100)}")
    # A user runs plancheck at its default --jobs (the CPUs, at most 8): on 2 CPUs, --jobs 2.
    # Both ratios are printed; the target is judged against the default where it is 2.
    slower_one, slower_two = loop["wall"] / one["wall"], loop["wall"] / two["wall"]
    default_jobs = min(os.cpu_count() or 1, 8)
    judged = slower_two if default_jobs == 2 else slower_one
    default = " (the default here)" if default_jobs == 2 else ""
    print(f"psql per check, same EXPLAIN runs: wall {loop['wall']:.2f} s "
          f"(Σ EXPLAIN {loop['analyze']:.2f} s)")
    print(f"  ÷ plancheck --jobs 1: {slower_one:.1f}×, ÷ --jobs 2{default}: {slower_two:.1f}×   "
          f"target ≥ 5× at the default --jobs  {verdict(judged >= 5)}")

    env = dict(os.environ, PLANCHECK_CACHE_DIR=os.path.join(tmp, "cache"),
               PLANCHECK_PG_BIN=bin_dir)
    first, _ = first_table_line(env)
    second, _ = first_table_line(env)
    print(f"demo, first table line: {first:.1f} s the first time, {second:.1f} s the second   "
          f"target ≤ 3 s  {verdict(second <= 3)}")

    if not args.skip_full_board:
        server.psql("postgres", "CREATE DATABASE full_board")
        wall, _, status, _ = timed([PLANCHECK, "fixtures", "load", "--database-url",
                                 server.url("full_board"), "--scale", "1"],
                                 stderr=subprocess.DEVNULL)
        server.psql("postgres", "DROP DATABASE full_board")
        if status != 0:
            sys.exit("bench: loading the full board failed")
        print(f"full board (--scale 1) load: {wall:.1f} s   target ≤ 60 s  "
              f"{verdict(wall <= 60)}")


if __name__ == "__main__":
    main()
