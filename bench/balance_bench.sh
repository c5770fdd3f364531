#!/usr/bin/env bash
# Balanced shares against lock-step, alternating in one run so the machine's drift hits both
# alike (issue 20's targets). Each pair runs, in this order:
#   straggler  cpu:2 --slow-replica 1:3, lock-step then --balance   (target: balanced <= 0.6 x lock-step)
#   plain      cpu:2, lock-step then --balance                       (target: balanced no slower,
#                                                                      waiting share <= 1/3 of lock-step's)
#   uneven     cpu:2 --slow-replica 1:1.12, lock-step then --balance: two vCPUs as unequal as the
#              issue measured them (4.31 s against 3.86 s in one epoch), which a quiet host here
#              is not; the waiting a lasting difference causes is what shares can remove
#   bound      one cpu:1 run while an independent cpu:1 run occupies the other vCPU: the host's
#              bound for cpu:2 is half its epoch time             (target: balanced cpu:2 within 10 %)
# Epoch times are the last epoch's (the shares settle in the first); medians over the pairs.
# Then the rule is replayed on one traced lock-step run of each kind (balance_replay): both
# modes on the same step times.
# Usage: bench/balance_bench.sh [PAIRS] [IMAGES] [EPOCHS]   (default 5 pairs, 16,384 images, 2 epochs)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-5}
images=${2:-16384}
epochs=${3:-2}
cli=${MIRRORBENCH_CLI:-build/bin/mirrorbench-cli}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() {   # NAME ARGS...
  local name=$1
  shift
  "$cli" train --epochs "$epochs" --limit-train "$images" --json "$out/$name.json" "$@" > /dev/null
}
for i in $(seq 1 "$pairs"); do
  run "slow-lock-$i" --devices cpu:2 --slow-replica 1:3
  run "slow-bal-$i" --devices cpu:2 --slow-replica 1:3 --balance
  run "lock-$i" --devices cpu:2
  run "bal-$i" --devices cpu:2 --balance
  run "uneven-lock-$i" --devices cpu:2 --slow-replica 1:1.12
  run "uneven-bal-$i" --devices cpu:2 --slow-replica 1:1.12 --balance
  # Two independent single-replica runs side by side, one per vCPU (each pins to its CPU 0
  # unless told otherwise: taskset gives each its own).
  taskset -c 1 "$cli" train --epochs "$epochs" --limit-train "$images" --devices cpu:1 \
    --json "$out/other-$i.json" > /dev/null &
  other=$!
  taskset -c 0 "$cli" train --epochs "$epochs" --limit-train "$images" --devices cpu:1 \
    --json "$out/side-$i.json" > /dev/null
  wait "$other"
done
python3 - "$out" "$pairs" <<'PY'
import json, os, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
def rec(name): return json.load(open(os.path.join(out, name)))
def epoch(name): return rec(name)["epochs"][-1]
def t(name): return epoch(name)["time_s"]
def waiting(name):   # the share of all replicas' step time spent waiting for the slowest
    rt = epoch(name)["replica_times"]
    total = sum(sum(r.values()) for r in rt)
    return sum(r["wait_s"] for r in rt) / total if total > 0 else 0.0
def shares(name):
    ch = rec(name)["config"].get("share_changes", [])
    return "/".join(str(s) for s in ch[-1]["shares"]) if ch else "even"
med = statistics.median
rows = {k: [t("%s-%d.json" % (k, i)) for i in range(1, pairs + 1)]
        for k in ("slow-lock", "slow-bal", "lock", "bal", "uneven-lock", "uneven-bal", "side")}
waits = {k: [waiting("%s-%d.json" % (k, i)) for i in range(1, pairs + 1)]
         for k in ("slow-lock", "slow-bal", "lock", "bal", "uneven-lock", "uneven-bal")}
accs = {k: [epoch("%s-%d.json" % (k, i))["val_acc"] for i in range(1, pairs + 1)] for k in ("slow-lock", "slow-bal", "lock", "bal")}
for k, v in rows.items():
    w = "  waiting %4.1f %%" % (100 * med(waits[k])) if k in waits else ""
    a = "  val_acc %.4f" % med(accs[k]) if k in accs else ""
    print("%-11s: %s  median %.3f s%s%s" % (k, " ".join("%.3f" % x for x in v), med(v), w, a))
print("final shares: straggler %s, plain %s" % (shares("slow-bal-%d.json" % pairs), shares("bal-%d.json" % pairs)))
bound = med(rows["side"]) / 2
print("straggler x3: balanced / lock-step = %.3f  (target <= 0.6, ideal 0.5)" % (med(rows["slow-bal"]) / med(rows["slow-lock"])))
print("cpu:2       : balanced / lock-step = %.3f  (target <= 1)" % (med(rows["bal"]) / med(rows["lock"])))
lw, bw = med(waits["lock"]), med(waits["bal"])
print("cpu:2       : waiting share balanced / lock-step = %.3f  (%.1f %% vs %.1f %%; target <= 0.333)" % (bw / lw if lw > 0 else 0, 100 * bw, 100 * lw))
uw, ubw = med(waits["uneven-lock"]), med(waits["uneven-bal"])
print("uneven x1.12: balanced / lock-step = %.3f; waiting share balanced / lock-step = %.3f  (%.1f %% vs %.1f %%; target <= 0.333)"
      % (med(rows["uneven-bal"]) / med(rows["uneven-lock"]), ubw / uw if uw > 0 else 0, 100 * ubw, 100 * uw))
print("host bound  : half of a side-by-side cpu:1 epoch = %.3f s; balanced cpu:2 / bound = %.3f, lock-step / bound = %.3f  (target <= 1.10)"
      % (bound, med(rows["bal"]) / bound, med(rows["lock"]) / bound))
PY
# The rule replayed on traced lock-step runs (bench/balance_replay.cpp): balanced against
# lock-step on the very same step times, which the pairs above cannot give on a drifting host.
replay=${MIRRORBENCH_REPLAY:-$(dirname "$cli")/balance_replay}
for kind in plain uneven; do
  extra=()
  [[ $kind == uneven ]] && extra=(--slow-replica 1:1.12)
  steps=$(( (images + 127) / 128 * epochs ))
  (( steps <= 2000 )) || { echo "replay: $steps steps are traced sampled; use at most 2000 steps"; break; }
  "$cli" train --epochs "$epochs" --limit-train "$images" --devices cpu:2 "${extra[@]}" --trace "$out/trace-$kind.json" > /dev/null
  echo "replayed on one traced lock-step $kind run:"
  "$replay" "$out/trace-$kind.json" | sed 's/^/  /'
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(grep -o -m1 avx512f /proc/cpuinfo || echo 'no avx512f'), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
