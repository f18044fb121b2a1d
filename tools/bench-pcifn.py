#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The table of `make bench-pcifn` from the console logs of its boots.

    tools/bench-pcifn.py LOG...

Each log is one boot of mode bench_pcifn (tests/vm/bench_pcifn.sh) under one stack; its
figures are `benchfig STACK RUN NAME VALUE` lines (STACK `ours` or `up`), uverbs_bench's
`skip DEV NAME reason` lines say why a figure is missing on that stack, and `benchwhy NAME
reason` lines name a figure neither stack can give here. Per figure: the median over every
sample of each stack with [min..max], and the ratio of the medians oriented so that above
1.0 means ours is better: ours/upstream for rates, upstream/ours for costs (figures named
`*_ns`, `*_us`, `*_ms`, `*bytes*`).
"""
import re
import statistics
import sys

FIG = re.compile(r"benchfig (ours|up) (\S+) (\S+) (\S+)\s*$")
SKIP = re.compile(r"(ours|up)-\S+\| skip \S+ (\S+) (.*?)\s*$")
WHY = re.compile(r"benchwhy (\S+) (.*?)\s*$")
KMSG = re.compile(r"^\[ *[0-9]+\.[0-9]+\] ")


def is_cost(name):
    return bool(re.search(r"(_ns|_us|_ms)(_|$)|bytes", name))


def fmt(v):
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 100000:
        return f"{v / 1000:.0f}k"
    if a >= 10000:
        return f"{v / 1000:.1f}k"
    if a >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def col(vals):
    if not vals:
        return "-"
    return f"{fmt(statistics.median(vals))} [{fmt(min(vals))}..{fmt(max(vals))}]"


def main(logs):
    order, vals, why, runs = [], {}, {}, {"ours": set(), "up": set()}
    for path in logs:
        with open(path, errors="replace") as f:
            for line in f:
                line = KMSG.sub("", line.rstrip("\r\n"))
                m = FIG.search(line)
                if m:
                    stack, run, name, v = m.groups()
                    try:
                        x = float(v)
                    except ValueError:
                        continue
                    if name not in vals:
                        order.append(name)
                        vals[name] = {"ours": [], "up": []}
                    vals[name][stack].append(x)
                    runs[stack].add((path, run))
                    continue
                m = SKIP.search(line)
                if m:
                    stack, name, reason = m.groups()
                    why.setdefault(name, {})[stack] = reason
                    continue
                m = WHY.search(line)
                if m:
                    why.setdefault(m.group(1), {})["both"] = m.group(2)
    print(f"boots: ours {len(runs['ours'])}, upstream {len(runs['up'])}")
    w = max([len(n) for n in order + list(why)] + [10])
    print(f"{'figure':<{w}}  {'ours median [min..max]':<28} {'upstream median [min..max]':<28} ratio")
    for name in order:
        o, u = vals[name]["ours"], vals[name]["up"]
        r = "-"
        if o and u and statistics.median(o) > 0 and statistics.median(u) > 0:
            mo, mu = statistics.median(o), statistics.median(u)
            r = f"{(mu / mo if is_cost(name) else mo / mu):.2f}"
        print(f"{name:<{w}}  {col(o):<28} {col(u):<28} {r}")
    missing = [n for n in why if n not in vals or not vals[n]["ours"] or not vals[n]["up"]]
    if missing:
        print("not measured on a stack, and why:")
        for name in missing:
            for stack, reason in sorted(why[name].items()):
                label = {"ours": "ours", "up": "upstream", "both": "both"}[stack]
                print(f"  {name} ({label}): {reason}")
    return 0 if runs["ours"] and runs["up"] else 1


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
