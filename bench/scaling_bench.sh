#!/usr/bin/env bash
# The scaling predictor against measured runs, side by side in ONE run: `mirrorbench-cli
# scaling` calibrates and predicts, then the same machine trains cpu:1 .. cpu:N (every count it
# can run) in global- and per-replica-batch mode, and 2 MPI processes x 1 replica, and the
# steady-state epoch time (median of epochs 2..n) is compared with the prediction.
# The machine is calibrated again after the runs, and the measured epochs' spread is printed:
# on a shared host both say how much of an error is the host's noise rather than the model's.
# Usage: bench/scaling_bench.sh [EPOCHS]   (EPOCHS >= 3; needs build/bin/mirrorbench-cli)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-3}
source bench/bench_env.sh
cores=$(nproc)

"$cli" scaling --max-replicas "$cores" --json "$out/pred.json" > "$out/scaling.txt"
for n in $(seq 1 "$cores"); do
  "$cli" train --devices "cpu:$n" --epochs "$epochs" --json "$out/global-$n.json" > /dev/null
  "$cli" train --devices "cpu:$n" --epochs "$epochs" --per-replica-batch --json "$out/per-replica-$n.json" > /dev/null
done
if command -v mpirun > /dev/null; then
  mpirun --allow-run-as-root --mca btl self,vader --mca oob_tcp_if_include lo -np 2 \
    "$cli" train --devices cpu:1 --epochs "$epochs" --json "$out/mpi-2.json" > /dev/null
fi
"$cli" scaling --max-replicas "$cores" --json "$out/pred-after.json" > /dev/null

python3 - "$out" "$cores" <<'PY'
import json, os, statistics, sys
out, cores = sys.argv[1], int(sys.argv[2])
pred = json.load(open(os.path.join(out, "pred.json")))
after = json.load(open(os.path.join(out, "pred-after.json")))
by = {(p["replicas"], p["mode"]): p for p in pred["predictions"]}
by_after = {(p["replicas"], p["mode"]): p for p in after["predictions"]}
def steady(f):
    t = [e["time_s"] for e in json.load(open(f))["epochs"]]
    tail = t[1:] if len(t) >= 3 else t
    return statistics.median(tail), max(tail) / min(tail) - 1
print("%-28s %10s %10s %8s %12s %9s" % ("run", "predicted", "measured", "error", "recalibrated", "spread"))
worst = 0
def row(name, f, key):
    global worst
    m, spread = steady(f)
    p, q = by[key]["epoch_s"], by_after[key]["epoch_s"]
    err = (p - m) / m
    worst = max(worst, abs(err))
    print("%-28s %9.2fs %9.2fs %+7.1f%% %11.2fs %8.1f%%" % (name, p, m, 100 * err, q, 100 * spread))
for n in range(1, cores + 1):
    for mode in ("global", "per-replica"):
        row("cpu:%d %s" % (n, mode), os.path.join(out, "%s-%d.json" % (mode, n)), (n, mode))
mpi = os.path.join(out, "mpi-2.json")
if os.path.exists(mpi):
    row("mpirun -np 2 cpu:1 global", mpi, (2, "global"))
print("\npredicted: calibrated before the runs; recalibrated: the same prediction from a second")
print("calibration after them; spread: slowest / fastest steady-state epoch of the run - 1")
print("\nworst |error| %.1f %% (target <= 15 %%)" % (100 * worst))
PY
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(grep -o -m1 avx512f /proc/cpuinfo || echo 'no avx512f'), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
