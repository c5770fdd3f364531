#!/usr/bin/env bash
# GPU benchmark, side by side in ONE run: Fashion-MNIST at global batch 128 with
# mirrorbench-cli on cuda:0 and with the same model in PyTorch eager (bench/torch_gpu.py,
# data resident on the GPU, same Adam hyperparameters), then mirrorbench with two simulated
# replicas on cuda:0 (cuda:0,cuda:0, in-GPU all-reduce). Prints epoch times, achieved
# TFLOP/s (cnn::train_flops_per_image's count: forward + backward) and the ratios.
# Results (run records, logs, summary.txt, results.json) go to $OUT when set, else to a
# temporary folder that is printed at the end.
#
# Usage: bench/gpu_bench.sh [EPOCHS]        (default 1; with more, the last epoch is the
#                                           steady-state figure, the first includes warm-up)
# Env:   CLI=path/to/mirrorbench-cli (default: the newest build*/bin/mirrorbench-cli whose
#            `--version` reports CUDA)
#        DATA=IDX folder (default /usr/share/datasets/fashion-mnist)
#        PYTHON=the interpreter whose PyTorch to compare with (default: python3 on PATH, which
#            is where `pip install torch` puts it; torch_gpu.py needs nothing but torch)
set -uo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-1}
data=${DATA:-/usr/share/datasets/fashion-mnist}
python=${PYTHON:-python3}
cli=${CLI:-}
if [ -z "$cli" ]; then
  # Newest first; a CPU-only build would only report "CUDA: not built" and fail every run.
  for c in $(ls -t build*/bin/mirrorbench-cli 2> /dev/null); do
    if [ -x "$c" ] && "$c" --version 2> /dev/null | grep -q "cuDNN"; then cli=$c; break; fi
  done
fi
if [ -z "$cli" ] || [ ! -x "$cli" ]; then
  echo "gpu_bench.sh: no CUDA-enabled mirrorbench-cli under build*/bin; build one with" >&2
  echo "  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DMB_WITH_GUI=OFF -DMB_WITH_CUDA=ON" >&2
  echo "  cmake --build build-cuda --target mirrorbench-cli   (or set CLI=...)" >&2
  exit 2
fi
cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

{
  echo "== $(date -u +%FT%TZ)  $cli"
  "$cli" --version
  "$cli" devices
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
} 2>&1 | tee "$out/machine.txt"

# mirrorbench: one run record per device list; --verbose logs (graph capture, cuDNN
# choices, failures) go to a log file next to it.
run_mb() {  # tag devices
  echo "== mirrorbench --devices $2"
  if "$cli" train --devices "$2" --batch 128 --epochs "$epochs" --data "$data" --json "$out/mb-$1.json" \
      --verbose > "$out/mb-$1.out" 2> "$out/mb-$1.log"; then
    tail -n 3 "$out/mb-$1.out"
  else
    echo "mirrorbench --devices $2 FAILED (exit $?); last log lines:"
    tail -n 20 "$out/mb-$1.log" "$out/mb-$1.out"
  fi
}
run_mb cuda0 cuda:0
run_mb cuda0x2 cuda:0,cuda:0

echo "== PyTorch eager on cuda:0"
if "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2> "$out/torch-probe.log"; then
  "$python" bench/torch_gpu.py --data "$data" --batch 128 --epochs "$epochs" > "$out/torch.jsonl" 2> "$out/torch.log" \
    || { echo "torch_gpu.py FAILED:"; tail -n 20 "$out/torch.log"; }
  cat "$out/torch.jsonl"
else
  { echo "no PyTorch with CUDA for $python ($(command -v "$python")): the comparison is skipped"
    tail -n 3 "$out/torch-probe.log"; } | tee "$out/torch.log"
  : > "$out/torch.jsonl"
fi

"$python" - "$out" <<'PY' | tee "$out/summary.txt"
import json, os, sys

out = sys.argv[1]
# cnn::train_flops_per_image (core/model/cnn_spec.cpp): multiply-adds x 2; backward =
# grad-input + grad-weight, no grad-input for conv1.
conv1 = 2.0 * 26 * 26 * 32 * 9
conv2 = 2.0 * 11 * 11 * 64 * 32 * 9
fc1 = 2.0 * 1600 * 64
fc2 = 2.0 * 64 * 10
flops_per_image = conv1 * 2 + (conv2 + fc1 + fc2) * 3

def mb(tag):
    path = os.path.join(out, f"mb-{tag}.json")
    if not os.path.exists(path):
        return None
    r = json.load(open(path))
    if not r.get("epochs"):
        return {"status": r.get("status"), "error": r.get("error")}
    last = r["epochs"][-1]
    return {"status": r["status"], "error": r.get("error", ""), "epochs": len(r["epochs"]),
            "first_epoch_s": r["epochs"][0]["time_s"], "time_s": last["time_s"], "val_acc": last["val_acc"],
            "train_loss": last["train_loss"], "allreduce_s": last["allreduce_s"],
            "images": r["config"]["train_size"], "communicator": r["config"]["communicator"],
            "in_sync": r["replicas_in_sync"]}

torch = None
rows = [json.loads(l) for l in open(os.path.join(out, "torch.jsonl")) if l.startswith("{")]
if rows:
    last = rows[-1]
    torch = {"mode": last["mode"], "epochs": len(rows), "first_epoch_s": rows[0]["time_s"], "time_s": last["time_s"],
             "val_acc": last["val_acc"], "train_loss": last["train_loss"], "images": last["images"]}

results = {"flops_per_image": flops_per_image, "mirrorbench_cuda0": mb("cuda0"),
           "mirrorbench_cuda0x2": mb("cuda0x2"), "torch_eager": torch}
for key in ("mirrorbench_cuda0", "mirrorbench_cuda0x2", "torch_eager"):
    r = results[key]
    if r and r.get("time_s"):
        r["tflops"] = flops_per_image * r["images"] / r["time_s"] / 1e12

print(f"\nforward + backward: {flops_per_image / 1e6:.2f} MFLOP per image")
print("%-28s %9s %9s %9s %8s  %s" % ("run", "s/epoch", "1st ep s", "TFLOP/s", "val_acc", "notes"))
for key, label in (("mirrorbench_cuda0", "mirrorbench cuda:0"), ("mirrorbench_cuda0x2", "mirrorbench cuda:0,cuda:0"),
                   ("torch_eager", "pytorch eager cuda:0")):
    r = results[key]
    if not r or not r.get("time_s"):
        print("%-28s %s" % (label, "no result" if not r else f"{r.get('status')}: {r.get('error')}"))
        continue
    notes = ""
    if "allreduce_s" in r:
        notes = f"all-reduce {100 * r['allreduce_s'] / r['time_s']:.1f} % ({r['communicator']})"
        if not r["in_sync"]:
            notes += ", REPLICAS OUT OF SYNC"
    print("%-28s %9.3f %9.3f %9.3f %8.4f  %s" % (label, r["time_s"], r["first_epoch_s"], r["tflops"], r["val_acc"], notes))

a, t = results["mirrorbench_cuda0"], results["torch_eager"]
if a and t and a.get("time_s") and t.get("time_s"):
    results["speedup_vs_torch"] = t["time_s"] / a["time_s"]
    print(f"\nmirrorbench cuda:0 vs PyTorch eager: {t['time_s'] / a['time_s']:.2f}x faster "
          f"(time ratio mirrorbench/torch = {a['time_s'] / t['time_s']:.3f})")
s = results["mirrorbench_cuda0x2"]
if a and s and a.get("time_s") and s.get("time_s"):
    print(f"2 simulated replicas on one GPU: {s['time_s'] / a['time_s']:.2f}x the 1-replica epoch time, "
          f"val_acc {s['val_acc']:.4f} vs {a['val_acc']:.4f}")
json.dump(results, open(os.path.join(out, "results.json"), "w"), indent=2)
PY
echo "results in $out"
