#!/usr/bin/env bash
# The input-bound demonstration (issue 28): cpu:2 against the plain one-replica baseline, with
# a simulated input latency that makes loading the bottleneck (one loader, one step ahead), and
# with the remedy that fits a latency (more loaders, a deeper prefetch); then a simulated input
# CPU cost, where more loaders do not help on CPU replicas (they take the replicas' cores).
# Each configuration REPEATS times, alternating; medians of the runs' mean epoch times.
#   bench/input_bench.sh [REPEATS] [IMAGES] [EPOCHS] [LATENCY_MS] [CPU_MS]   (default 3 20000 2 0.5 0.2)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_env.sh
repeats=${1:-3}; images=${2:-20000}; epochs=${3:-2}; latency=${4:-0.5}; cpu=${5:-0.2}
echo "# $(date -u +%FT%TZ) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) ($(nproc) cores)"
echo "# reference CNN, batch 128, --limit-train $images, $epochs epoch(s), $repeats run(s) each, alternating"
configs=(
  "1 replica, plain|--devices cpu:1"
  "2 replicas, plain|--devices cpu:2"
  "2 replicas, latency ${latency} ms, 1 loader, prefetch 1|--devices cpu:2 --input-latency $latency --loaders 1 --prefetch 1"
  "2 replicas, latency ${latency} ms, 8 loaders, prefetch 2|--devices cpu:2 --input-latency $latency --loaders 8 --prefetch 2"
  "2 replicas, CPU ${cpu} ms, 1 loader, prefetch 1|--devices cpu:2 --input-cpu $cpu --loaders 1 --prefetch 1"
  "2 replicas, CPU ${cpu} ms, 4 loaders, prefetch 2|--devices cpu:2 --input-cpu $cpu --loaders 4 --prefetch 2"
)
for ((r = 0; r < repeats; ++r)); do
  for ((i = 0; i < ${#configs[@]}; ++i)); do
    # shellcheck disable=SC2086
    "$cli" train --limit-train "$images" --epochs "$epochs" ${configs[$i]#*|} --json "$out/run-$i-$r.json" >/dev/null
  done
done
python3 - "$out" "$repeats" "${configs[@]}" <<'PY'
import json, statistics, sys
out, repeats, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
base = None
print(f"{'configuration':<48} {'s/epoch':>8} {'speed-up':>9} {'input wait':>11} {'val acc':>8}")
for i, c in enumerate(configs):
    times, waits, accs = [], [], []
    for r in range(repeats):
        rec = json.load(open(f"{out}/run-{i}-{r}.json"))
        eps = rec["epochs"]
        times.append(sum(e["time_s"] for e in eps) / len(eps))
        accs.append(eps[-1]["val_acc"])
        tot = wait = 0.0
        for e in eps:
            for t in e["replica_times"]:
                step = sum(v for k, v in t.items() if k not in ("compute_cpu_s", "hidden_allreduce_s"))
                tot += step
                wait += t.get("input_wait_s", 0.0)
        waits.append(wait / tot if tot else 0.0)
    t = statistics.median(times)
    base = base or t
    print(f"{c.split('|')[0]:<48} {t:8.2f} {base / t:8.2f}x {100 * statistics.median(waits):10.0f}% {accs[-1]:8.4f}")
PY
