#!/usr/bin/env bash
# What the per-replica time breakdown costs: the same training with the phases timed and with
# --no-breakdown, alternating (ABAB...) in one run so the machine's drift hits both alike, and
# the ratio of the median epoch times. Target: <= 1 % (ratio <= 1.01).
# Usage: bench/breakdown_bench.sh [PAIRS] [DEVICES]   (default 4 pairs of cpu:2, 16,384 images)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-4}
devices=${2:-cpu:2}
source bench/bench_env.sh
for i in $(seq 1 "$pairs"); do
  "$cli" train --devices "$devices" --epochs 1 --limit-train 16384 --json "$out/on-$i.json" > /dev/null
  "$cli" train --devices "$devices" --epochs 1 --limit-train 16384 --no-breakdown --json "$out/off-$i.json" > /dev/null
done
python3 - "$out" "$pairs" <<'PY'
import json, os, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
t = lambda name: json.load(open(os.path.join(out, name)))["epochs"][0]["time_s"]
on = [t("on-%d.json" % i) for i in range(1, pairs + 1)]
off = [t("off-%d.json" % i) for i in range(1, pairs + 1)]
print("breakdown on : " + " ".join("%.3f" % x for x in on) + "  median %.3f s" % statistics.median(on))
print("breakdown off: " + " ".join("%.3f" % x for x in off) + "  median %.3f s" % statistics.median(off))
r = statistics.median(on) / statistics.median(off)
print("on / off = %.4f  (target <= 1.01; pair-to-pair spread %.1f %%)" % (r, 100 * (max(on + off) - min(on + off)) / statistics.median(off)))
PY
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(grep -o -m1 avx512f /proc/cpuinfo || echo 'no avx512f'), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
