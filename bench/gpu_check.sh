#!/usr/bin/env bash
# The GPU check (issues 9 and 17; docs/benchmarks.md#gpu): one short script for a machine with
# one GPU, from the carry folder bench/gpu_carry.sh built on a GPU-less machine. The most
# valuable checks first, every step (the preamble too) under a time limit, at most BUDGET_S
# seconds in all (default 290: a rerun fits the device time), and summary.txt rewritten after
# every step, so whatever ran comes back even if the machine is taken away mid-way:
#   lab          cuda_lab: every kernel and library call validated against the CPU and timed,
#                both step paths side by side
#   mb-fp32      train cuda:0, FP32 (one NCCL rank: its init, graph capture, abort)
#   mb-tf32      the same in TF32
#   mb-nccl      mpirun -np 1 ... --devices cuda:local (the multi-process path; carried Open MPI)
#   torch-*      bench/torch_gpu.py: PyTorch with fused Adam and cudnn.benchmark, eager and with
#                CUDA graphs, FP32 and TF32
#   fault-stall  MB_INJECT_FAULT=stall: a device stall mid-run must end in bounded time
#   fault-hang   MB_INJECT_FAULT=hang: a device that never finishes: the thread sticks in the
#                driver, the run is reported failed and the CLI exits
#   fault-abort  MB_INJECT_FAULT=abort on replica 1 of cuda:0,cuda:0 mid-step
#   mb-fused     MB_CUDA_PATH=fused, FP32
#   mb-cuda0x2   two simulated replicas on cuda:0
#   torch-compile  torch.compile, FP32 (slow to compile, so late)
#   test_cuda    the CUDA tests; compute-sanitizer over `cuda_lab --quick --no-steps` when the machine has it
# then bench/gpu_summary.py: steady state = median of epochs 2..n, warm-up apart, every PyTorch
# column beside ours, the lab's verdict, the faults' times, the issue's targets. Without a GPU
# it says so and runs its skeleton (the lab and test_cuda report no GPU, the CPU self-test, a
# short CPU run through the same record and summary path, mpirun on the CPU).
#
# Usage: bench/gpu_check.sh [CARRY_DIR]    default .carry/gpu
# Env:   OUT=folder for the results (default: a new temporary folder, printed), EPOCHS (5),
#        TORCH_EPOCHS (3), DATA (default CARRY_DIR/data), PYTHON (python3: the one with PyTorch),
#        BUDGET_S (290)
# Writes to OUT (few files come back from the device machine): summary.txt, lab.txt,
# results.json, steps.tsv, logs.tar.gz (every log, run record, lab JSON and PyTorch output).
set -uo pipefail
cd "$(dirname "$0")/.."
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
torch_epochs=${TORCH_EPOCHS:-3}   # PyTorch's epochs are slow: the median of epochs 2 and 3 is its steady state
data=${DATA:-$carry/data}
python=${PYTHON:-python3}
budget=${BUDGET_S:-290}
start=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
logs=$work/logs
mkdir -p "$logs"
: > "$logs/steps.tsv"
failed=0

# --- time limits and the summary ---------------------------------------------------------

# A step's limit: what it asks for, or what is left of the budget (less the summary's margin).
limit() {
  local left=$((budget - (SECONDS - start) - 12))
  if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# The summary, rewritten after every step: the steps so far and what their outputs say.
write_summary() {
  cp "$work"/mb-*.json "$work"/torch-*.jsonl "$work"/lab.json "$logs/" 2> /dev/null
  {
    [ "${have_gpu:-0}" = 1 ] || echo "NO GPU: the GPU runs were skipped; what follows is the skeleton's output"
    timeout 30 "$python" bench/gpu_summary.py "$logs" || echo "(gpu_summary.py failed or timed out: exit $?)"
    echo
    echo "steps (name, exit code, seconds, verdict):"
    sed 's/^/  /' "$logs/steps.tsv"
    echo "total $((SECONDS - start)) s of the ${budget} s budget"
  } > "$out/summary.txt.new" 2>&1
  mv "$out/summary.txt.new" "$out/summary.txt"
  cp "$logs/steps.tsv" "$out/"
  cp "$logs/results.json" "$out/" 2> /dev/null
  [ -f "$logs/lab.log" ] && cp "$logs/lab.log" "$out/lab.txt"
  return 0
}

# step NAME SECONDS COMMAND...: runs it under its limit, output to logs/NAME.log; a line in
# steps.tsv either way (a step with no time left is skipped, not started).
step() {
  local name=$1 secs t0=$SECONDS rc lim
  secs=$2
  shift 2
  lim=$(limit "$secs")
  if [ "$lim" -lt 5 ]; then
    printf '%s\t-\t0\tskipped: budget spent\n' "$name" >> "$logs/steps.tsv"
    echo "== $name: skipped (budget spent)"
    return 0
  fi
  echo "== $name (limit ${lim} s): $*" | sed "s|$carry|CARRY|g; s|$work|WORK|g"
  timeout --kill-after=5 "$lim" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  local verdict=ok
  if [ "$rc" -ne 0 ]; then
    verdict=$([ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "TIMED OUT" || echo "FAILED")
    failed=1
  fi
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" "$verdict" >> "$logs/steps.tsv"
  echo "   $verdict (exit $rc, $((SECONDS - t0)) s)"
  tail -n 3 "$logs/$name.log" | sed 's/^/   | /'
  write_summary
  return "$rc"
}

# fault NAME SECONDS EXPECTED_TEXT COMMAND...: a run that must FAIL (exit 1) with the text, in
# time; anything else (a pass, a hang, another message) is a failed check.
fault() {
  local name=$1 secs=$2 want=$3 t0=$SECONDS rc lim verdict
  shift 3
  lim=$(limit "$secs")
  if [ "$lim" -lt 5 ]; then
    printf '%s\t-\t0\tskipped: budget spent\n' "$name" >> "$logs/steps.tsv"
    return 0
  fi
  echo "== $name (limit ${lim} s, must fail with '$want'): $*" | sed "s|$carry|CARRY|g; s|$work|WORK|g"
  timeout --kill-after=5 "$lim" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q -- "$want" "$logs/$name.log"; then
    verdict="ok: ended in $((SECONDS - t0)) s with the expected message"
  else
    verdict="FAILED: exit $rc, expected exit 1 and '$want'"
    failed=1
  fi
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" "$verdict" >> "$logs/steps.tsv"
  echo "   $verdict"
  grep -m1 -- "$want" "$logs/$name.log" | cut -c1-300 | sed 's/^/   | /'
  write_summary
}

# --- the preamble: every command under a limit ---------------------------------------------

# The carried libraries: xz where the machine has a working one, else python3's lzma.
unpack=1
if command -v xz > /dev/null; then
  timeout 60 tar -C "$work" -xJf "$carry/libs.tar.xz" 2> "$logs/unpack.log"
  unpack=$?
fi
if [ "$unpack" -ne 0 ]; then
  timeout 60 "$python" -c "import sys, tarfile; tarfile.open(sys.argv[1], 'r:xz').extractall(sys.argv[2])" \
    "$carry/libs.tar.xz" "$work" 2>> "$logs/unpack.log"
  unpack=$?
fi
if [ "$unpack" -ne 0 ] || [ ! -d "$work/lib" ] || [ -z "$(ls -A "$work/lib")" ]; then
  echo "gpu_check.sh: unpacking $carry/libs.tar.xz failed (exit $unpack)" | tee "$out/summary.txt"
  exit 1
fi

# The GPU machine's own CUDA libraries (wheels: cudart, cuBLAS, cuDNN, NCCL), looked for where
# wheels and toolkits live, not in the whole file system.
roots=$(timeout 20 "$python" -c "import site, sys; print('\n'.join(site.getsitepackages() + [site.getusersitepackages()]))" \
  2> /dev/null)
wheel_dirs=$(timeout 40 find $roots /usr/local /opt /usr/lib/x86_64-linux-gnu -maxdepth 6 \
  \( -name 'libcudart.so.13' -o -name 'libcublas.so.13' -o -name 'libcublasLt.so.13' -o -name 'libcudnn.so.9' \
     -o -name 'libnccl.so.2' \) -print 2> /dev/null | xargs -r -n1 dirname | sort -u | paste -sd: -)
mb_libs="$work/lib${wheel_dirs:+:$wheel_dirs}"
# The carried libraries (Debian's libz, libgomp, libzstd, glib ...) must come first for our
# programs, and only for them: python3 and PyTorch keep the machine's own. A program, not a
# shell function, so that timeout can run it.
mb=$work/mb
cat > "$mb" << EOF
#!/bin/sh
export LD_LIBRARY_PATH="$mb_libs" OPAL_PREFIX="$work/ompi" PMIX_INSTALL_PREFIX="$work/ompi/pmix"
export PATH="$work/ompi/bin:\$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_show_load_errors=0
exec "\$@"
EOF
chmod +x "$mb"
cli=$carry/bin/mirrorbench-cli
lab=$carry/bin/cuda_lab
tests=$carry/bin/test_cuda
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2> /dev/null | head -n1)

{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  cat "$carry/BUILD_INFO"
  echo "== CUDA library folders: ${wheel_dirs:-none found}"
  echo "== compute-sanitizer: ${sanitizer:-not found}"
  command -v nvidia-smi > /dev/null &&
    timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  grep -m1 'model name' /proc/cpuinfo
  echo "== libraries not found:"
  "$mb" ldd "$cli" "$tests" "$lab" | grep 'not found' | sort -u
  timeout 20 "$mb" "$cli" --version
  timeout 30 "$mb" "$cli" devices
  timeout 60 "$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
} > "$logs/machine.txt" 2>&1
sed -n '1,40p' "$logs/machine.txt"
if "$mb" ldd "$cli" "$tests" "$lab" | grep -q 'not found'; then
  echo "gpu_check.sh: libraries missing (above): the binaries cannot start here" | tee -a "$logs/machine.txt"
  failed=1
fi
have_gpu=0
timeout 30 "$mb" "$cli" devices 2> /dev/null | grep -q '^cuda:0' && have_gpu=1
mpi_ok=0
if timeout 20 "$mb" mpirun -np 1 true > "$logs/mpirun-probe.log" 2>&1; then
  mpi_ok=1
else
  echo "mpirun cannot run here (log: mpirun-probe.log): the multi-process part is skipped" | tee -a "$logs/machine.txt"
fi
torch_ok=0
timeout 60 "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" > /dev/null 2>&1 && torch_ok=1
write_summary

train() {  # NAME SECONDS DEVICES [extra train options...]: a run record mb-NAME.json
  local name=$1 secs=$2 devices=$3
  shift 3
  step "mb-$name" "$secs" "$mb" "$cli" train --devices "$devices" --batch 128 --epochs "$epochs" --data "$data" \
    --json "$work/mb-$name.json" --verbose "$@"
}
torch_run() {  # PRECISION MODES SECONDS TAG: one PyTorch process for the modes, torch-PRECISION-TAG.jsonl
  local p=$1 modes=$2 secs=$3 tag=$4 flag=()
  [ "$p" = tf32 ] && flag=(--tf32)
  step "torch-$p-$tag" "$secs" bash -c "'$python' bench/torch_gpu.py --data '$data' --batch 128 \
    --epochs $torch_epochs --modes $modes ${flag[*]} > '$work/torch-$p-$tag.jsonl'"
}

if [ "$have_gpu" = 1 ]; then
  echo "GPU found: running the check"
  step lab 100 "$mb" "$lab" --json "$work/lab.json"
  train fp32 45 cuda:0
  train tf32 45 cuda:0 --precision tf32
  if [ "$mpi_ok" = 1 ]; then
    step mb-nccl 45 "$mb" mpirun -np 1 "$cli" train --devices cuda:local --batch 128 --epochs "$epochs" --data "$data" \
      --json "$work/mb-nccl.json" --verbose
  fi
  if [ "$torch_ok" = 1 ]; then
    for p in fp32 tf32; do torch_run "$p" eager,graphs 60 main; done
  fi
  # Faults: a stall is noticed at the next statistics read (--timeout 5 s) and released; a hang
  # leaves a thread in the driver (cudaFree behind a kernel that never ends) for 2 x 5 s more.
  fault fault-stall 40 "has not finished within" env MB_INJECT_FAULT=stall:40 MB_CUDNN_TUNE_S=0 \
    "$mb" "$cli" train --devices cuda:0 --epochs 1 --timeout 5 --data "$data" --verbose
  fault fault-hang 50 "stuck inside the device driver" env MB_INJECT_FAULT=hang:40 MB_CUDNN_TUNE_S=0 \
    "$mb" "$cli" train --devices cuda:0 --epochs 1 --timeout 5 --data "$data" --verbose
  fault fault-abort 30 "injected abort" env MB_INJECT_FAULT=abort:40:1 MB_CUDNN_TUNE_S=0 \
    "$mb" "$cli" train --devices cuda:0,cuda:0 --epochs 1 --timeout 5 --data "$data" --verbose
  export MB_CUDA_PATH=fused
  train fused 45 cuda:0
  unset MB_CUDA_PATH
  train cuda0x2 45 cuda:0,cuda:0
  [ "$torch_ok" = 1 ] && torch_run fp32 compile 90 compile
  step test_cuda 120 "$mb" "$tests"
  [ -n "$sanitizer" ] && step sanitizer-lab 90 "$mb" "$sanitizer" --tool memcheck --error-exitcode 1 "$lab" --quick --no-steps
else
  echo "NO GPU on this machine: only the check's skeleton runs (the GPU runs are skipped)" | tee -a "$logs/machine.txt"
  step lab 60 "$mb" "$lab"
  step test_cuda 120 "$mb" "$tests"
  step selftest 120 "$mb" "$cli" selftest
  step mb-skeleton 120 "$mb" "$cli" train --devices cpu:1 --batch 128 --epochs 2 --limit-train 2048 --limit-val 512 \
    --data "$data" --json "$work/mb-skeleton.json"
  if [ "$mpi_ok" = 1 ]; then
    step mb-mpi-cpu 120 "$mb" mpirun -np 1 "$cli" train --devices cpu:1 --batch 128 --epochs 1 --limit-train 1024 \
      --limit-val 256 --data "$data" --json "$work/mb-mpi-cpu.json"
  fi
fi

write_summary
tar -C "$work" -czf "$out/logs.tar.gz" logs
cat "$out/summary.txt"
echo "results in $out"
exit "$failed"
