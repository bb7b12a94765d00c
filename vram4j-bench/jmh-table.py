#!/usr/bin/env python3
"""Prints a JMH JSON result file as a Markdown table: one row per parameter set, one column per benchmark
method; sample-time results as p50 / p90 / p99 in ns per operation, throughput and average-time results as
score +- error (JMH's 99.9% interval) with their unit (e.g. ops/us, ns/op).
Usage: jmh-table.py RESULT.json"""
import json, sys
from collections import OrderedDict

rows = OrderedDict()
methods = []
for r in json.load(open(sys.argv[1])):
    m = r["benchmark"].rsplit(".", 1)[1]
    if m not in methods:
        methods.append(m)
    key = ",".join(f"{v}" for k, v in sorted(r.get("params", {}).items()))
    pct = r["primaryMetric"].get("scorePercentiles", {})
    if r.get("mode") == "thrpt":
        pm = r["primaryMetric"]
        err = pm['scoreError']
        err = f"{err:,.2f}" if isinstance(err, (int, float)) else "?"  # NaN with one iteration
        cell = f"{pm['score']:,.2f} ± {err} {pm['scoreUnit']}"
    elif pct:
        cell = "%s / %s / %s" % tuple(f"{pct[p]:,.0f}" for p in ("50.0", "90.0", "99.0"))
    else:
        pm = r["primaryMetric"]
        err = pm['scoreError']
        err = f" ± {err:,.1f}" if isinstance(err, (int, float)) else ""  # NaN with one iteration
        cell = f"{pm['score']:,.1f}{err} {pm['scoreUnit']}"
    rows.setdefault(key, {})[m] = cell
print("| params | " + " | ".join(methods) + " |")
print("|---|" + "---|" * len(methods))
for k, v in rows.items():
    print(f"| {k} | " + " | ".join(v.get(m, "") for m in methods) + " |")
