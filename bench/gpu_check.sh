#!/usr/bin/env bash
# The GPU check (issue 9; docs/benchmarks.md#gpu), one script for a machine with one GPU, in
# at most 8 minutes, from the carry folder bench/gpu_carry.sh built on a GPU-less machine:
#   test_cuda                                       the CUDA tests (GPU-only ones included)
#   mirrorbench-cli selftest                        every backend against the reference
#   train cuda:0, 5 epochs, FP32 and TF32           accuracy and steady-state epoch time
#                                                   (and FP32 once more without CUDA graphs)
#   train cuda:0,cuda:0                             two simulated replicas: same accuracy
#   mpirun -np 1 ... --devices cuda:local           the multi-process path (carried Open MPI;
#                                                   skipped with a message if mpirun cannot run)
#   bench/torch_gpu.py, FP32 and TF32               PyTorch eager on the same GPU: data resident,
#                                                   same model, batch, epochs, warm-up excluded
# then bench/gpu_summary.py: steady state = median of epochs 2..n, warm-up apart, ratios and the
# issue's targets. Without a GPU it says so and still runs its skeleton (test_cuda skips, the
# CPU self-test, a short CPU run through the same record and summary path, mpirun on the CPU).
#
# Usage: bench/gpu_check.sh [CARRY_DIR]    default .carry/gpu
# Env:   OUT=folder for the results (default: a new temporary folder, printed), EPOCHS (5),
#        DATA (default CARRY_DIR/data), PYTHON (python3: the one with PyTorch), BUDGET_S (450)
# Writes to OUT (at most 8 files come back from the device machine): summary.txt,
# results.json, logs.tar.gz (every log, run record and PyTorch output), steps.tsv.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
carry=${1:-.carry/gpu}
if [ ! -x "$carry/bin/mirrorbench-cli" ] || [ ! -f "$carry/libs.tar.xz" ]; then
  echo "gpu_check.sh: $carry is not a carry folder: run bench/gpu_carry.sh first (on any machine)" >&2
  exit 2
fi
carry=$(cd "$carry" && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
epochs=${EPOCHS:-5}
data=${DATA:-$carry/data}
python=${PYTHON:-python3}
budget=${BUDGET_S:-450}
start=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
logs=$work/logs
mkdir -p "$logs"
: > "$out/steps.tsv"

# A step's time limit: what it asks for, or what is left of the budget (less a margin for the
# summary), whichever is less.
limit() {
  local left=$((budget - (SECONDS - start) - 15))
  if [ "$left" -lt "$1" ]; then echo $((left > 5 ? left : 5)); else echo "$1"; fi
}
failed=0
# step NAME SECONDS COMMAND...: runs it with a time limit, output to logs/NAME.log.
step() {
  local name=$1 secs=$2 t0=$SECONDS rc
  shift 2
  echo "== $name: $*" | sed "s|$carry|CARRY|g; s|$work|WORK|g"
  timeout --kill-after=10 "$(limit "$secs")" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >> "$out/steps.tsv"
  if [ "$rc" -ne 0 ]; then
    failed=1
    [ "$rc" -eq 124 ] && echo "   TIMED OUT" || echo "   FAILED (exit $rc)"
    tail -n 8 "$logs/$name.log" | sed 's/^/   | /'
  else
    tail -n 2 "$logs/$name.log" | sed 's/^/   | /'
  fi
  return "$rc"
}

# --- the carried libraries and the GPU machine's own CUDA wheels -----------------------
tar -C "$work" -xJf "$carry/libs.tar.xz"
wheel_dirs=$(find / \( -path /proc -o -path /sys -o -path /dev -o -path "$work" \) -prune -o \
  \( -name 'libcudart.so.13' -o -name 'libcublas.so.13' -o -name 'libcublasLt.so.13' -o -name 'libcudnn.so.9' \
     -o -name 'libnccl.so.2' \) -print 2> /dev/null | xargs -r -n1 dirname | sort -u | paste -sd: -)
export LD_LIBRARY_PATH="$work/lib${wheel_dirs:+:$wheel_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX=$work/ompi PMIX_INSTALL_PREFIX=$work/ompi/pmix PATH=$work/ompi/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mca_base_component_show_load_errors=0
cli=$carry/bin/mirrorbench-cli
tests=$carry/bin/test_cuda

{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  cat "$carry/BUILD_INFO"
  echo "== CUDA wheel folders: ${wheel_dirs:-none found}"
  echo "== LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  grep -m1 'model name' /proc/cpuinfo
  echo "== libraries not found:"
  ldd "$cli" "$tests" | grep 'not found' | sort -u
  "$cli" --version
  "$cli" devices
  "$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
} > "$logs/machine.txt" 2>&1
sed -n '1,40p' "$logs/machine.txt"
if ldd "$cli" "$tests" | grep -q 'not found'; then
  echo "gpu_check.sh: libraries missing (above): the binaries cannot start here" | tee -a "$logs/machine.txt"
  failed=1
fi
have_gpu=0
"$cli" devices 2> /dev/null | grep -q '^cuda:0' && have_gpu=1
mpi_ok=0
if command -v mpirun > /dev/null && timeout 30 mpirun -np 1 true > "$logs/mpirun-probe.log" 2>&1; then
  mpi_ok=1
else
  echo "mpirun cannot run here (log: mpirun-probe.log): the multi-process part is skipped" | tee -a "$logs/machine.txt"
fi

train() {  # NAME DEVICES [extra train options...]: a run record mb-NAME.json
  local name=$1 devices=$2
  shift 2
  step "mb-$name" 150 "$cli" train --devices "$devices" --batch 128 --epochs "$epochs" --data "$data" \
    --json "$work/mb-$name.json" --verbose "$@"
}

if [ "$have_gpu" = 1 ]; then
  echo "GPU found: running the check"
  train fp32 cuda:0
  train tf32 cuda:0 --precision tf32
  # The same FP32 run without CUDA graphs: tells graph trouble from kernel trouble.
  MIRRORBENCH_NO_GRAPH=1 train fp32-eager cuda:0
  step test_cuda 180 "$tests"
  step selftest 120 "$cli" selftest
  train cuda0x2 cuda:0,cuda:0
  if [ "$mpi_ok" = 1 ]; then
    step mb-mpi 150 mpirun -np 1 "$cli" train --devices cuda:local --batch 128 --epochs "$epochs" --data "$data" \
      --json "$work/mb-mpi.json" --verbose
  fi
  for p in fp32 tf32; do
    flag=()
    [ "$p" = tf32 ] && flag=(--tf32)
    step "torch-$p" 180 bash -c "'$python' bench/torch_gpu.py --data '$data' --batch 128 --epochs $epochs ${flag[*]} \
      > '$work/torch-$p.jsonl'"
  done
else
  echo "NO GPU on this machine: only the check's skeleton runs (the GPU runs are skipped)" | tee -a "$logs/machine.txt"
  step test_cuda 180 "$tests"
  step selftest 120 "$cli" selftest
  step mb-skeleton 120 "$cli" train --devices cpu:1 --batch 128 --epochs 2 --limit-train 2048 --limit-val 512 \
    --data "$data" --json "$work/mb-skeleton.json"
  if [ "$mpi_ok" = 1 ]; then
    step mb-mpi-cpu 120 mpirun -np 1 "$cli" train --devices cpu:1 --batch 128 --epochs 1 --limit-train 1024 \
      --limit-val 256 --data "$data" --json "$work/mb-mpi-cpu.json"
  fi
fi

cp "$work"/mb-*.json "$work"/torch-*.jsonl "$logs/" 2> /dev/null
{
  [ "$have_gpu" = 1 ] || echo "NO GPU: the GPU runs were skipped; what follows is the skeleton's output"
  "$python" bench/gpu_summary.py "$logs"
  echo
  echo "steps (name, exit code, seconds):"
  sed 's/^/  /' "$out/steps.tsv"
  echo "total $((SECONDS - start)) s"
} > "$out/summary.txt" 2>&1
cp "$logs/results.json" "$out/" 2> /dev/null
tar -C "$work" -czf "$out/logs.tar.gz" logs
cat "$out/summary.txt"
echo "results in $out"
exit "$failed"
