#!/usr/bin/env bash
# GPU benchmark with a local CUDA build, side by side in ONE run: the kernel lab (cuda_lab,
# beside the CLI), Fashion-MNIST at global batch 128 with mirrorbench-cli on cuda:0 in FP32,
# TF32 and on the fused path (--cuda-path fused), and the same model in PyTorch
# (bench/torch_gpu.py: fused Adam, cudnn.benchmark, eager and CUDA-graph modes, data resident
# on the GPU, same Adam hyperparameters, warm-up excluded the same way), then two simulated
# replicas on cuda:0 (cuda:0,cuda:0, in-GPU all-reduce). bench/gpu_summary.py prints the lab's
# verdict, steady-state epoch times (the median of epochs 2..n; warm-up apart), achieved TFLOP/s
# (cnn::train_flops_per_image's count) and every PyTorch column beside ours.
# For the project's GPU check machine (no Qt/oneDNN/MPI there) use bench/gpu_carry.sh and
# bench/gpu_check.sh instead. Results (run records, logs, summary.txt, results.json) go to
# $OUT when set, else to a temporary folder that is printed at the end.
#
# Usage: bench/gpu_bench.sh [EPOCHS]        (default 5; steady state needs at least 2)
# Env:   CLI=path/to/mirrorbench-cli (default: the newest build*/bin/mirrorbench-cli whose
#            `--version` reports CUDA)
#        DATA=IDX folder (default /usr/share/datasets/fashion-mnist)
#        PYTHON=the interpreter whose PyTorch to compare with (default: python3 on PATH, which
#            is where `pip install torch` puts it; torch_gpu.py needs nothing but torch)
set -uo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-5}
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

# mirrorbench: one run record per run; --verbose logs (graph decisions, cuDNN choices, the
# all-reduce profile, failures) go to a log file next to it.
run_mb() {  # tag devices [options...]
  local tag=$1 devices=$2
  shift 2
  echo "== mirrorbench --devices $devices $*"
  if "$cli" train --devices "$devices" --batch 128 --epochs "$epochs" --data "$data" --json "$out/mb-$tag.json" \
      --verbose "$@" > "$out/mb-$tag.out" 2> "$out/mb-$tag.log"; then
    tail -n 3 "$out/mb-$tag.out"
  else
    echo "mirrorbench --devices $devices FAILED (exit $?); last log lines:"
    tail -n 20 "$out/mb-$tag.log" "$out/mb-$tag.out"
  fi
}
lab=$(dirname "$cli")/cuda_lab
if [ -x "$lab" ]; then
  echo "== the kernel lab: $lab"
  "$lab" --json "$out/lab.json" > "$out/lab.log" 2>&1 || echo "cuda_lab: some check FAILED (see lab.log)"
  tail -n 1 "$out/lab.log"
fi
run_mb fp32 cuda:0
run_mb tf32 cuda:0 --precision tf32
run_mb fused cuda:0 --cuda-path fused
run_mb cuda0x2 cuda:0,cuda:0

if "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2> "$out/torch-probe.log"; then
  for p in fp32 tf32; do
    echo "== PyTorch (fused Adam, cudnn.benchmark; eager and CUDA graphs) on cuda:0, $p"
    flag=()
    [ "$p" = tf32 ] && flag=(--tf32)
    "$python" bench/torch_gpu.py --data "$data" --batch 128 --epochs "$epochs" "${flag[@]}" > "$out/torch-$p.jsonl" \
      2> "$out/torch-$p.log" || { echo "torch_gpu.py FAILED:"; tail -n 20 "$out/torch-$p.log"; }
  done
else
  echo "no PyTorch with CUDA for $python ($(command -v "$python")): the comparison is skipped"
  tail -n 3 "$out/torch-probe.log"
fi

"$python" bench/gpu_summary.py "$out" | tee "$out/summary.txt"
echo "results in $out"
