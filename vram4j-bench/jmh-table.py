#!/usr/bin/env python3
"""Prints a JMH JSON result file (sample-time mode) as a Markdown table: one row per parameter set,
one column group per benchmark method, p50 / p90 / p99 in ns per operation.
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
    if pct:
        cell = "%s / %s / %s" % tuple(f"{pct[p]:,.0f}" for p in ("50.0", "90.0", "99.0"))
    else:
        cell = f"{r['primaryMetric']['score']:,.1f} {r['primaryMetric']['scoreUnit']}"
    rows.setdefault(key, {})[m] = cell
print("| params | " + " | ".join(methods) + " |")
print("|---|" + "---|" * len(methods))
for k, v in rows.items():
    print(f"| {k} | " + " | ".join(v.get(m, "") for m in methods) + " |")
