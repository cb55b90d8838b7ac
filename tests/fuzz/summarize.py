#!/usr/bin/env python3
"""Totals per target of fuzz-logs/summary.tsv (campaign.sh's lines) as a Markdown table:
runs, CPU seconds, executions, edges and features at the end of the last run, runs that
ended on a finding.   python3 tests/fuzz/summarize.py [fuzz-logs/summary.tsv]"""
import collections
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "fuzz-logs/summary.tsv"
tot = collections.OrderedDict()
for line in open(path):
    f = line.rstrip("\n").split("\t")
    if len(f) < 8:
        continue
    t = f[1]
    cpu = int(f[2].split()[1].rstrip("s") or 0) if f[2].split()[1] != "?s" else 0
    execs = int(f[3].split()[1]) if f[3].split()[1] != "?" else 0
    e = tot.setdefault(t, {"runs": 0, "cpu": 0, "execs": 0, "cov": "?", "ft": "?", "found": 0})
    e["runs"] += 1
    e["cpu"] += cpu
    e["execs"] += execs
    e["cov"], e["ft"] = f[4].split()[1], f[5].split()[1]
    # rc 72: libFuzzer stopped by SIGINT (a campaign ended early), not a finding
    e["found"] += f[6] not in ("rc 0", "rc 72")
print("| target | runs | CPU | executions | edges (cov) | features | runs ended by a finding |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for t, e in tot.items():
    print(f"| {t} | {e['runs']} | {e['cpu'] / 3600:.2f} h | {e['execs']:,} | {e['cov']} | "
          f"{e['ft']} | {e['found']} |")
