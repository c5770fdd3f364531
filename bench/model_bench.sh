#!/usr/bin/env bash
# Models other than the reference, side by side with PyTorch in ONE run (issue 26's targets):
# one epoch at batch 128 of mlp and lenet5 (Fashion-MNIST, 60,000 images) and cnn-cifar
# (20,000 synthetic 32x32x3 images), each with mirrorbench cpu:1 and cpu:2 and PyTorch 1 process
# x 1 thread on the same network (bench/torch_cnn.py --model, built from mirrorbench's own
# reading of the model). The reference CNN runs too, as the yardstick for cpu:2's scaling.
# Repetitions alternate the configurations; the summary takes medians and states the spread.
# Prints each model's mirrorbench / PyTorch ratio against its target, its achieved GFLOP/s as a
# share of one core's FMA peak measured in the same run (kernel_bench --peak; the FLOPs per
# image from `mirrorbench-cli model --json`), and cpu:2's speed-up next to the reference's.
#
# Usage: bench/model_bench.sh [--repeat N] [--models "mlp lenet5 cnn-cifar"]
# Needs build/bin/mirrorbench-cli (MIRRORBENCH_CLI overrides), build/bin/kernel_bench,
# Debian's python3-torch with OpenBLAS behind libblas.so.3 (checked: the reference BLAS makes
# PyTorch's dense layers ~10x slower, an unfair anchor).
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=3
models="reference mlp lenet5 cnn-cifar"
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat=$2; shift 2 ;;
    --models) models="reference $2"; shift 2 ;;
    *) echo "usage: bench/model_bench.sh [--repeat N] [--models \"mlp lenet5 cnn-cifar\"]" >&2; exit 2 ;;
  esac
done
source bench/bench_env.sh
kbench=${KERNEL_BENCH:-$(dirname "$cli")/kernel_bench}
export MIRRORBENCH_CLI=$cli

blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 || true)
case "$blas" in
  *openblas*) ;;
  *) echo "model_bench.sh: libblas.so.3 is $blas, not OpenBLAS: install libopenblas0-openmp" \
          "(update-alternatives) so PyTorch gets its best" >&2; exit 2 ;;
esac

echo "date:  $(date -u +%Y-%m-%dT%H:%M:%SZ)   commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "CPU:   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores here," \
     "$(grep -qo avx512f /proc/cpuinfo && echo AVX-512 || echo no AVX-512)"
echo "BLAS:  $blas   torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
peak=$("$kbench" --peak | awk '/^peak/ {print $2, $3; exit}')
echo "FMA peak of one core: ${peak#* } GFLOP/s (Highway target ${peak%% *}, kernel_bench --peak)"

# The data each model trains on, for both programs.
mb_data() {
  case "$1" in
    cnn-cifar) echo "--data synthetic:32x32x3 --limit-train 20000" ;;
    *) echo "" ;;
  esac
}
torch_data() {
  case "$1" in
    cnn-cifar) echo "--synthetic 20000" ;;
    *) echo "" ;;
  esac
}

for m in $models; do "$cli" model "$m" --json > "$out/model-$m.json"; done

run_mb() {  # model devices
  # shellcheck disable=SC2046
  "$cli" train --model "$1" --devices "$2" --epochs 1 --batch 128 $(mb_data "$1") --json "$out/mb.json" > /dev/null
  python3 - "$out/mb.json" "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = r["epochs"][-1]
print(json.dumps({"model": sys.argv[2], "mode": "mirrorbench " + sys.argv[3], "time_s": e["time_s"],
                  "images": r["config"]["train_size"], "val_acc": e["val_acc"]}))
PY
}
run_torch() {  # model
  # shellcheck disable=SC2046
  OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_cnn.py --model "$1" --procs 1 --threads 1 $(torch_data "$1") |
    python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"model": sys.argv[1], "mode": "torch 1 thread", "time_s": r["time_s"], "val_acc": r["val_acc"]}))
' "$1"
}

for r in $(seq 1 "$repeat"); do
  for m in $models; do
    run_mb "$m" cpu:1
    run_mb "$m" cpu:2
    [ "$m" = reference ] || run_torch "$m"
  done
done | tee "$out/all.jsonl"
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "$peak" "$models" <<'PY'
import json, os, statistics, sys
out, peak, models = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
rows = [json.loads(l) for l in open(os.path.join(out, "all.jsonl")) if l.startswith("{")]
targets = {"mlp": 0.6, "lenet5": 0.5, "cnn-cifar": 0.75}
times, images, acc = {}, {}, {}
for r in rows:
    times.setdefault((r["model"], r["mode"]), []).append(r["time_s"])
    acc[(r["model"], r["mode"])] = r["val_acc"]
    if "images" in r:
        images[r["model"]] = r["images"]
med = {k: statistics.median(v) for k, v in times.items()}
spread = lambda k: "%.2f-%.2f" % (min(times[k]), max(times[k]))
n = max(len(v) for v in times.values())
print("\nmedians of %d alternating runs, one epoch at batch 128 (spread: fastest-slowest)" % n)
print("%-10s %-18s %9s %12s %8s" % ("model", "run", "s/epoch", "spread", "val_acc"))
for (m, mode), t in med.items():
    print("%-10s %-18s %9.2f %12s %8.4f" % (m, mode, t, spread((m, mode)), acc[(m, mode)]))
ref1, ref2 = med.get(("reference", "mirrorbench cpu:1")), med.get(("reference", "mirrorbench cpu:2"))
ref_speedup = ref1 / ref2 if ref1 and ref2 else None
print()
for m in models:
    s = json.load(open(os.path.join(out, "model-%s.json" % m)))
    one, two = med.get((m, "mirrorbench cpu:1")), med.get((m, "mirrorbench cpu:2"))
    torch1 = med.get((m, "torch 1 thread"))
    gflops = s["train_flops_per_image"] * images[m] / one * 1e-9
    line = "%-10s %6d images  %6.1f GFLOP/s = %3.0f %% of the %s GFLOP/s peak" % (
        m, images[m], gflops, 100 * gflops / float(peak[1]), peak[1])
    if torch1:
        target = targets.get(m)
        ratio = one / torch1
        line += "   cpu:1 / torch = %.3f%s" % (ratio, "" if target is None else
                                               "  (target <= %.2f: %s)" % (target, "met" if ratio <= target else "MISSED"))
    speedup = one / two
    line += "   cpu:2 speed-up %.2f" % speedup
    if ref_speedup and m != "reference":
        line += " (%.0f %% of the reference's %.2f)" % (100 * speedup / ref_speedup, ref_speedup)
    print(line)
PY
