#!/usr/bin/env bash
# CPU benchmark, side by side in ONE run (machines here are shared and noisy, so only the
# ratios between runs made minutes apart mean much): one epoch of Fashion-MNIST at global
# batch 128 with mirrorbench cpu:1 and cpu:2, and the same model in PyTorch (Debian's
# python3-torch): 1 process x 1 thread, 1 process x 2 threads, DDP gloo 2 processes x 1 thread.
# Prints the machine (CPU model, ISA, load before and after), times, accuracies, ratios against
# the targets, and cpu:1's achieved GFLOP/s against the core's FMA peak (kernel_bench --peak).
#
# Usage: bench/cpu_bench.sh [EPOCHS] [--isa avx2] [--repeat N]
#   --repeat N   run the five configurations N times in turn; the summary takes each one's
#                fastest run (on a shared machine other load only ever slows a run down)
#   --isa avx2   emulate an AVX2-only CPU on an AVX-512 one: oneDNN capped at AVX2 (mirrorbench's
#                --onednn-isa; ONEDNN_MAX_CPU_ISA for PyTorch's oneDNN), mirrorbench's own kernels
#                on Highway's AVX2 target (--simd-target), PyTorch's own kernels on their AVX2
#                build (ATEN_CPU_CAPABILITY). An emulation on this CPU, not a real AVX2 machine:
#                caches, clocks and FMA units stay this CPU's.
# Needs build/bin/mirrorbench-cli (MIRRORBENCH_CLI overrides), build/bin/kernel_bench, python3-torch.
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=1
isa=native
repeat=1
while [ $# -gt 0 ]; do
  case "$1" in
    --isa) isa=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    [0-9]*) epochs=$1; shift ;;
    *) echo "usage: bench/cpu_bench.sh [EPOCHS] [--isa avx2] [--repeat N]" >&2; exit 2 ;;
  esac
done
source bench/bench_env.sh
kbench=${KERNEL_BENCH:-$(dirname "$cli")/kernel_bench}

mb_isa=()   # mirrorbench's options for the instruction sets (the environment is PyTorch's)
case "$isa" in
  native) peak_target="" ;;
  avx2)
    export ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2
    mb_isa=(--onednn-isa avx2 --simd-target avx2)
    peak_target=avx2 ;;
  *) echo "cpu_bench.sh: --isa native or avx2" >&2; exit 2 ;;
esac

echo "date:  $(date -u +%Y-%m-%dT%H:%M:%SZ)   commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "CPU:   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores here," \
     "$(grep -qo avx512f /proc/cpuinfo && echo AVX-512 || echo no AVX-512)$( [ "$isa" = avx2 ] && echo ', EMULATING AVX2 ONLY')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
peak=""
if [ -x "$kbench" ]; then
  # The best target this CPU runs (or the emulated one): the first line, or the named one.
  peak=$("$kbench" --peak ${peak_target:+--target $peak_target} | awk '/^peak/ {print $2, $3; exit}')
  echo "FMA peak of one core: ${peak#* } GFLOP/s (Highway target ${peak%% *}, kernel_bench --peak)"
fi

run_mb() {  # devices
  "$cli" train --devices "$1" --epochs "$epochs" "${mb_isa[@]}" --json "$out/mb-$1.json" > /dev/null
  python3 - "$out/mb-$1.json" "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for e in r["epochs"]:
    print(json.dumps({"mode": "mirrorbench " + sys.argv[2], "epoch": e["epoch"], "time_s": e["time_s"],
                      "val_acc": e["val_acc"], "train_loss": e["train_loss"], "images_per_s": e["images_per_s"],
                      "allreduce_share": e["allreduce_s"] / e["time_s"]}))
PY
}

for r in $(seq 1 "$repeat"); do
  run_mb cpu:1
  run_mb cpu:2
  OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_cnn.py --procs 1 --threads 1 --epochs "$epochs"
  /usr/bin/python3 bench/torch_cnn.py --procs 1 --threads 2 --epochs "$epochs"
  OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_cnn.py --procs 2 --epochs "$epochs"
done | tee "$out/all.jsonl"
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"

"$cli" model reference --json > "$out/model.json"
python3 - "$out/all.jsonl" "$isa" "$peak" "$out/model.json" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
isa, peak = sys.argv[2], sys.argv[3].split()
flops_per_image = json.load(open(sys.argv[4]))["train_flops_per_image"]
by = {}
for r in rows:
    by.setdefault(r["mode"], []).append(r)
# Per configuration: the mean over epochs of its fastest repetition.
def run_time(v):
    reps = {}
    for x in v:
        reps.setdefault(x["rep"], []).append(x["time_s"])
    return min(statistics.mean(r) for r in reps.values())
rep_of = {}
for r in rows:   # repetitions come in order: a configuration's epoch 1 starts a new one
    rep_of[r["mode"]] = rep_of.get(r["mode"], 0) + (1 if r["epoch"] == 1 else 0)
    r["rep"] = rep_of[r["mode"]]
t = {m: run_time(v) for m, v in by.items()}
acc = {m: v[-1]["val_acc"] for m, v in by.items()}
print("\n%-34s %10s %9s" % ("run", "s/epoch", "val_acc") + ("   (fastest of %d)" % max(rep_of.values()) if max(rep_of.values()) > 1 else ""))
for m in by:
    share = by[m][-1].get("allreduce_share")
    print("%-34s %10.2f %9.4f%s" % (m, t[m], acc[m], "" if share is None else "   all-reduce %.1f %% of step time" % (100 * share)))
mb1, mb2 = t.get("mirrorbench cpu:1"), t.get("mirrorbench cpu:2")
ddp = next((t[m] for m in t if "DDP" in m), None)
one = next((t[m] for m in t if m.startswith("torch 1proc x 1thr")), None)
ddp_target = 0.25 if isa == "avx2" else 0.18
print()
if mb1 and mb2: print("scaling   mirrorbench cpu:2 / cpu:1           = %.3f  (target <= 0.55)" % (mb2 / mb1))
if mb2 and ddp: print("vs torch  mirrorbench cpu:2 / torch DDP 2x1    = %.3f  (target <= %.2f)" % (mb2 / ddp, ddp_target))
if mb1 and one: print("vs torch  mirrorbench cpu:1 / torch 1 thread   = %.3f%s" % (mb1 / one, "  (target <= 0.25)" if isa == "avx2" else ""))
if mb1 and len(peak) == 2:
    gflops = max(x["images_per_s"] for x in by["mirrorbench cpu:1"]) * flops_per_image * 1e-9
    print("cpu:1     %.1f GFLOP/s nominal = %.0f %% of the %s GFLOP/s FMA peak (%s)  (target >= 50 %%)"
          % (gflops, 100 * gflops / float(peak[1]), peak[1], peak[0]))
PY
