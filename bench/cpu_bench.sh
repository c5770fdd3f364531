#!/usr/bin/env bash
# CPU benchmark, side by side in ONE run (machines here are shared and noisy, so only the
# ratios between runs made minutes apart mean much): one epoch of Fashion-MNIST at global
# batch 128 with mirrorbench cpu:1 and cpu:2, and the same model in PyTorch (Debian's
# python3-torch): 1 process x 1 thread, 1 process x 2 threads, DDP gloo 2 processes x 1 thread.
# Usage: bench/cpu_bench.sh [EPOCHS]   (needs build/bin/mirrorbench-cli and python3-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-1}
cli=${MIRRORBENCH_CLI:-build/bin/mirrorbench-cli}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run_mb() {  # devices
  "$cli" train --devices "$1" --epochs "$epochs" --json "$out/mb-$1.json" > /dev/null
  python3 - "$out/mb-$1.json" "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for e in r["epochs"]:
    print(json.dumps({"mode": "mirrorbench " + sys.argv[2], "epoch": e["epoch"], "time_s": e["time_s"],
                      "val_acc": e["val_acc"], "train_loss": e["train_loss"],
                      "allreduce_share": e["allreduce_s"] / e["time_s"]}))
PY
}

{
  run_mb cpu:1
  run_mb cpu:2
  OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_cnn.py --procs 1 --threads 1 --epochs "$epochs"
  /usr/bin/python3 bench/torch_cnn.py --procs 1 --threads 2 --epochs "$epochs"
  OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_cnn.py --procs 2 --epochs "$epochs"
} | tee "$out/all.jsonl"

python3 - "$out/all.jsonl" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault(r["mode"], []).append(r)
t = {m: statistics.mean(x["time_s"] for x in v) for m, v in by.items()}
acc = {m: v[-1]["val_acc"] for m, v in by.items()}
print("\n%-34s %10s %9s" % ("run", "s/epoch", "val_acc"))
for m in by:
    share = by[m][-1].get("allreduce_share")
    print("%-34s %10.2f %9.4f%s" % (m, t[m], acc[m], "" if share is None else "   all-reduce %.1f %% of step time" % (100 * share)))
mb1, mb2 = t.get("mirrorbench cpu:1"), t.get("mirrorbench cpu:2")
ddp = next((t[m] for m in t if "DDP" in m), None)
one = next((t[m] for m in t if m.startswith("torch 1proc x 1thr")), None)
print()
if mb1 and mb2: print("scaling   mirrorbench cpu:2 / cpu:1           = %.3f  (target <= 0.55)" % (mb2 / mb1))
if mb2 and ddp: print("vs torch  mirrorbench cpu:2 / torch DDP 2x1    = %.3f  (target <= 0.50)" % (mb2 / ddp))
if mb1 and one: print("vs torch  mirrorbench cpu:1 / torch 1 thread   = %.3f" % (mb1 / one))
PY
