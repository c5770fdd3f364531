#!/usr/bin/python3
"""Summarises benchmark runs recorded side by side as JSON lines (bench/*_bench.sh).

Input lines: {"mode", "epoch", "time_s", "val_acc", ...}, one per epoch and run. Prints each
run's mean epoch time (the median of epochs 2..n when there are 3 or more, so warm-up and
first-epoch effects do not count), its last val_acc, and the ratios asked for:
  bench_report.py FILE "label=mode A/mode B<=target" ...
"""
import json
import statistics
import sys


def epoch_time(rows):
    times = [r["time_s"] for r in rows]
    return statistics.median(times[1:]) if len(times) >= 3 else statistics.mean(times)


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    by = {}
    for r in rows:
        by.setdefault(r["mode"], []).append(r)
    t = {m: epoch_time(v) for m, v in by.items()}
    print("\n%-40s %10s %9s" % ("run", "s/epoch", "val_acc"))
    for m, v in by.items():
        extra = v[-1].get("note", "")
        print("%-40s %10.2f %9.4f   %s" % (m, t[m], v[-1]["val_acc"], extra))
    print()
    for spec in sys.argv[2:]:
        label, expr = spec.split("=", 1)
        expr, _, target = expr.partition("<=")
        a, b = expr.split("/")
        if a in t and b in t:
            ratio = t[a] / t[b]
            verdict = "" if not target else ("  (target <= %s: %s)" % (target, "met" if ratio <= float(target) else "NOT met"))
            print("%-12s %s / %s = %.3f%s" % (label, a, b, ratio, verdict))
        else:
            print("%-12s %s / %s: missing (%s)" % (label, a, b, ", ".join(x for x in (a, b) if x not in t)))


if __name__ == "__main__":
    main()
