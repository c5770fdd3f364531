#!/usr/bin/env bash
# Scaling on a 16-core machine, side by side in one run: one epoch of Fashion-MNIST at global
# batch 128 with mirrorbench cpu:1, cpu:2, cpu:4, cpu:8 and cpu:16 (batch 128 / replicas each:
# 8 images per replica at cpu:16), then PyTorch DDP gloo 16 x 1 for comparison. Target:
# cpu:16 / cpu:1 <= 0.09 (11x on 16 cores). Prepared for such a machine; not yet run (the
# development machines have 2 cores).
#
# Usage: bench/cpu16_bench.sh [EPOCHS] [--no-torch]
# Needs build/bin/mirrorbench-cli (MIRRORBENCH_CLI overrides) and, unless --no-torch, python3-torch.
# Read the machine lines first: 16 replicas want 16 physical cores (the trainer pins replica i
# to logical CPU i; with SMT, two replicas may share a core and the ratio says little), and an
# otherwise idle machine (load below 1).
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=1
torch=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-torch) torch=0; shift ;;
    [0-9]*) epochs=$1; shift ;;
    *) echo "usage: bench/cpu16_bench.sh [EPOCHS] [--no-torch]" >&2; exit 2 ;;
  esac
done
source bench/bench_env.sh

echo "date:  $(date -u +%Y-%m-%dT%H:%M:%SZ)   commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "CPU:   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(grep -qo avx512f /proc/cpuinfo && echo AVX-512 || echo no AVX-512)"
lscpu 2>/dev/null | grep -E '^(CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\))' | sed 's/^/       /'
[ "$(nproc)" -ge 16 ] || echo "WARNING: only $(nproc) CPUs usable here; cpu:16 will share cores" >&2
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

for d in cpu:1 cpu:2 cpu:4 cpu:8 cpu:16; do
  "$cli" train --devices "$d" --epochs "$epochs" --json "$out/mb-$d.json" > /dev/null
  python3 - "$out/mb-$d.json" "$d" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for e in r["epochs"]:
    print(json.dumps({"mode": "mirrorbench " + sys.argv[2], "time_s": e["time_s"], "val_acc": e["val_acc"],
                      "allreduce_share": e["allreduce_s"] / e["time_s"]}))
PY
done | tee "$out/all.jsonl"
if [ "$torch" = 1 ]; then
  OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_cnn.py --procs 16 --epochs "$epochs" | tee -a "$out/all.jsonl"
fi
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out/all.jsonl" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault(r["mode"], []).append(r)
t = {m: statistics.mean(x["time_s"] for x in v) for m, v in by.items()}
one = t.get("mirrorbench cpu:1")
print("\n%-28s %10s %9s %10s %12s" % ("run", "s/epoch", "val_acc", "vs cpu:1", "all-reduce"))
for m, v in by.items():
    share = v[-1].get("allreduce_share")
    print("%-28s %10.2f %9.4f %10s %12s" % (m, t[m], v[-1]["val_acc"], "%.3f" % (t[m] / one) if one else "-",
                                           "" if share is None else "%.1f %%" % (100 * share)))
if one and "mirrorbench cpu:16" in t:
    print("\nscaling   mirrorbench cpu:16 / cpu:1 = %.3f  (target <= 0.09)" % (t["mirrorbench cpu:16"] / one))
PY
