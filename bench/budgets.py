#!/usr/bin/env python3
"""Time budgets on a busy machine: does `over-budget` flip when the machine is loaded?

    bench/budgets.py run LABEL [--runs 10] [--database-url URL --tight DIR]
    bench/budgets.py summary OUT_DIR
    bench/budgets.py compare OUT_DIR demo|tight
    bench/budgets.py make-tight SRC DST FACTOR JSON...

`run` runs the reference project (`plancheck demo --format json`, the embedded default) --runs
times into bench/figures/budgets/LABEL/demo-N.json and, with --tight, a copy of the project
whose `warm_ms` budgets sit close to the measured times (`make-tight` writes it) against
--database-url into tight-N.json. Load the machine yourself while a run goes on (`yes >
/dev/null` on every core, a second `cargo build --release`); every run records the load average
it started at.

`summary` reads every LABEL folder and prints, per label: each run's `over-budget` count as
plancheck judged it (`warm_ms` a budget for the p50, over only beyond the 0.5 ms noise floor
and with every run over), the count the old rule would give on the same runs (the p95 of the
measured runs over `warm_ms`; of 5 runs, the slowest), the checks whose p50 was over `warm_ms` but
within noise (`budget_used.warm`), and each check's p50 across the runs (min–max).

`compare OUT_DIR demo|tight` prints the same as one Markdown table, a column per label.

`make-tight SRC DST FACTOR JSON...` copies the project SRC to DST with every `warm_ms` set to
FACTOR × the median p50 the JSON reports give each read path (the tightest check of a read
path), rounded to three significant digits.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.environ.get("PLANCHECK_BENCH_BIN", os.path.join(ROOT, "target/release/plancheck"))
OUT = os.path.join(HERE, "figures", "budgets")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(label, runs, url, tight):
    out = os.path.join(OUT, label)
    os.makedirs(out, exist_ok=True)
    for i in range(1, runs + 1):
        jobs = [("demo", [BIN, "demo", "--format", "json", "-q"])]
        if tight:
            jobs.append(
                ("tight", [BIN, "check", "--project", tight, "--database-url", url,
                           "--format", "json", "-q"])
            )
        for name, cmd in jobs:
            load = loadavg()
            started = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode not in (0, 1):
                sys.exit(f"{name} run {i}: exit {p.returncode}\n{p.stderr}")
            doc = json.loads(p.stdout)
            doc["_bench"] = {"load1": load, "seconds": time.time() - started, "exit": p.returncode}
            with open(os.path.join(out, f"{name}-{i}.json"), "w") as f:
                json.dump(doc, f)
            print(f"{label} {name} {i}: exit {p.returncode}, load {load:.2f}", file=sys.stderr)


def old_rule_over(c):
    limit = (c.get("budget") or {}).get("warm_ms")
    w = c.get("warm_ms")
    return limit is not None and w is not None and c["verdict"] in ("pass", "over-budget") \
        and w["p95"] > limit


def summary(root):
    for label in sorted(os.listdir(root)):
        folder = os.path.join(root, label)
        if not os.path.isdir(folder):
            continue
        for name in ("demo", "tight"):
            files = sorted(
                (f for f in os.listdir(folder) if f.startswith(name + "-")),
                key=lambda f: int(re.findall(r"\d+", f)[0]),
            )
            if not files:
                continue
            docs = [json.load(open(os.path.join(folder, f))) for f in files]
            now = [sum(c["verdict"] == "over-budget" for c in d["checks"]) for d in docs]
            old = [sum(old_rule_over(c) for c in d["checks"]) for d in docs]
            loads = [d["_bench"]["load1"] for d in docs]
            print(f"## {label} / {name}: {len(docs)} runs, load average "
                  f"{min(loads):.1f}–{max(loads):.1f}")
            print(f"over-budget per run, p50 rule (plancheck): {now}")
            print(f"over-budget per run, old p95 rule:         {old}")
            noise = [sum((c.get("budget_used") or {}).get("warm") == "within-noise"
                         for c in d["checks"]) for d in docs]
            print(f"p50 over its budget but within noise:      {noise}")
            p50s = {}
            for d in docs:
                for c in d["checks"]:
                    if c.get("warm_ms"):
                        key = f"{c['read_path']} [{c['scope']}]"
                        p50s.setdefault(key, []).append(c["warm_ms"]["p50"])
                        p50s.setdefault(key + " fastest", []).append(c["warm_ms"]["min"])
                        limit = (c.get("budget") or {}).get("warm_ms")
                        p50s.setdefault(key + " budget", [limit])
            print("| check | budget ms | p50 min–max ms | fastest run min–max ms |")
            print("|---|---|---|---|")
            for key in sorted(k for k in p50s if not k.endswith((" fastest", " budget"))):
                v, f = p50s[key], p50s[key + " fastest"]
                print(f"| {key} | {p50s[key + ' budget'][0]} | {min(v):.3f}–{max(v):.3f} | "
                      f"{min(f):.3f}–{max(f):.3f} |")
            print()


def compare(root, name):
    """One Markdown table: a row per check, a column per label, each the p50's min–max across
    that label's runs of `name` (demo or tight), and a row of over-budget counts per run."""
    labels = [l for l in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, l))]
    p50s, budgets, counts = {}, {}, {}
    for label in labels:
        folder = os.path.join(root, label)
        files = [f for f in os.listdir(folder) if f.startswith(name + "-")]
        files.sort(key=lambda f: int(re.findall(r"\d+", f)[0]))
        docs = [json.load(open(os.path.join(folder, f))) for f in files]
        counts[label] = (
            [sum(c["verdict"] == "over-budget" for c in d["checks"]) for d in docs],
            [sum(old_rule_over(c) for c in d["checks"]) for d in docs],
            min(d["_bench"]["load1"] for d in docs),
            max(d["_bench"]["load1"] for d in docs),
        )
        for d in docs:
            for c in d["checks"]:
                if c.get("warm_ms"):
                    key = f"{c['read_path']} [{c['scope']}]"
                    p50s.setdefault(key, {}).setdefault(label, []).append(c["warm_ms"]["p50"])
                    budgets[key] = (c.get("budget") or {}).get("warm_ms")
    print("| check | warm_ms | " + " | ".join(f"{l}: p50 min–max" for l in labels) + " |")
    print("|---|---|" + "---|" * len(labels))
    for key in sorted(p50s):
        cells = []
        for l in labels:
            v = p50s[key].get(l, [])
            cells.append(f"{min(v):.3f}–{max(v):.3f}" if v else "-")
        print(f"| {key} | {budgets[key]:g} | " + " | ".join(cells) + " |")
    print()
    print("| | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    print("| load average (1 min) | " + " | ".join(
        f"{counts[l][2]:.1f}–{counts[l][3]:.1f}" for l in labels) + " |")
    print("| over-budget per run, p50 rule | " + " | ".join(
        " ".join(map(str, counts[l][0])) for l in labels) + " |")
    print("| over-budget per run, old p95 rule | " + " | ".join(
        " ".join(map(str, counts[l][1])) for l in labels) + " |")


def make_tight(src, dst, factor, reports):
    p50s = {}
    for r in reports:
        for c in json.load(open(r))["checks"]:
            p50s.setdefault(c["read_path"], []).append(c["warm_ms"]["p50"])
    if os.path.exists(dst):
        shutil.rmtree(dst)
    os.makedirs(dst)
    for part in ("plans", "expectations"):
        shutil.copytree(os.path.join(src, part), os.path.join(dst, part))
    shutil.copy(os.path.join(src, "plancheck.toml"), dst)
    for f in os.listdir(os.path.join(dst, "expectations")):
        path = os.path.join(dst, "expectations", f)
        name = f.removesuffix(".toml")
        if name not in p50s:
            continue
        budget = float(f"{factor * statistics.median(p50s[name]):.3g}")
        text = open(path).read()
        text = re.sub(r"warm_ms = [0-9.]+", f"warm_ms = {budget}", text)
        open(path, "w").write(text)
        print(f"{name}: warm_ms = {budget}", file=sys.stderr)


def main(argv):
    if len(argv) >= 2 and argv[1] == "run":
        args = argv[2:]
        label, runs, url, tight = args[0], 10, None, None
        i = 1
        while i < len(args):
            if args[i] == "--runs":
                runs = int(args[i + 1])
            elif args[i] == "--database-url":
                url = args[i + 1]
            elif args[i] == "--tight":
                tight = args[i + 1]
            else:
                sys.exit(f"unknown argument {args[i]}")
            i += 2
        run(label, runs, url, tight)
    elif len(argv) == 3 and argv[1] == "summary":
        summary(argv[2])
    elif len(argv) == 4 and argv[1] == "compare":
        compare(argv[2], argv[3])
    elif len(argv) >= 5 and argv[1] == "make-tight":
        make_tight(argv[2], argv[3], float(argv[4]), argv[5:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
