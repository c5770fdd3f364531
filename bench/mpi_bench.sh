#!/usr/bin/env bash
# Processes against threads, side by side in ONE run: an epoch of Fashion-MNIST at global
# batch 128 with mirrorbench in-process cpu:2 (2 threads), mirrorbench under
# `mpirun -np 2 ... --devices cpu:1` (2 processes, the all-reduce over Open MPI's shared
# memory), and PyTorch DDP over gloo, 2 processes x 1 thread. Prints times and ratios.
# Usage: bench/mpi_bench.sh [EPOCHS]   (needs build/bin/mirrorbench-cli, mpirun, python3-torch)
# Loopback and shared memory only, as every test and benchmark here.
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-3}
source bench/bench_env.sh
mpirun_cmd=(mpirun --allow-run-as-root --mca btl self,vader --mca oob_tcp_if_include lo --bind-to core -np 2)

# One JSON line per epoch of a mirrorbench run record.
record_lines() {  # json mode
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for e in r["epochs"]:
    wait = sum(t["wait_s"] for t in e.get("replica_times", [])) / max(1, len(e.get("replica_times", [])))
    print(json.dumps({"mode": sys.argv[2], "epoch": e["epoch"], "time_s": e["time_s"], "val_acc": e["val_acc"],
                      "note": "comm %s, digest %s, mean wait %.2f s" % (r["config"]["communicator"],
                                                                        e.get("param_digest", "?"), wait)}))
PY
}

{
  "$cli" train --devices cpu:2 --epochs "$epochs" --json "$out/threads.json" > /dev/null
  record_lines "$out/threads.json" "mirrorbench cpu:2 (threads)"
  "${mpirun_cmd[@]}" "$cli" train --devices cpu:1 --epochs "$epochs" --json "$out/mpi.json" > /dev/null
  record_lines "$out/mpi.json" "mirrorbench mpirun -np 2 cpu:1"
  OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_cnn.py --procs 2 --epochs "$epochs"
} | tee "$out/all.jsonl"

python3 bench/bench_report.py "$out/all.jsonl" \
  "processes=mirrorbench mpirun -np 2 cpu:1/mirrorbench cpu:2 (threads)<=1.10" \
  "vs-ddp=mirrorbench mpirun -np 2 cpu:1/torch 2proc x 1thr DDP<=0.50"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(grep -o -m1 avx512f /proc/cpuinfo || echo 'no avx512f'), $(date -u +%F)"
