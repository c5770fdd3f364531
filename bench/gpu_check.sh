#!/usr/bin/env bash
# The GPU check (issues 9, 17 and 30; docs/benchmarks.md#gpu): one short script for a machine
# with one GPU, from the carry folder bench/gpu_carry.sh built on a GPU-less machine. The most
# valuable checks first, every step (the preamble too) under a time limit of its own, at most
# BUDGET_S seconds in all (default 290: with the device's start-up, one rerun fits its 15
# minutes), and summary.txt rewritten after every step, so whatever ran comes back even if the
# machine is taken away mid-way:
#   lab          cuda_lab: every kernel and library call validated against the CPU and timed,
#                then both step paths side by side (--cudnn-tune 1)
#   test_cuda    the CUDA tests, early (they give every engine a 1 s cuDNN tuning budget):
#                graphs used and counted, <= 12 nodes on the fused path, the faults
#   mb-fp32      train cuda:0, one epoch, cudnn path, FP32 (one NCCL rank: init, capture, abort)
#   mb-fused     the same on the fused path (--cuda-path fused; FP32 either way)
#   mb-tf32      the cudnn path in TF32
#   mb-nccl      mpirun -np 1 ... --devices cuda:local (the multi-process path; carried Open MPI)
#   mb-cuda0x2   two simulated replicas on cuda:0 (the in-GPU communicator)
#   fault-stall  --inject-fault stall: a device stall mid-run must end in bounded time
#   fault-hang   --inject-fault hang: a device that never finishes: the thread sticks in the
#                driver, the run is reported failed and the CLI exits
#   fault-abort  --inject-fault abort on replica 1 of cuda:0,cuda:0 mid-step
#   sanitizer-lab  compute-sanitizer over `cuda_lab --quick --no-steps --batches 3`, when the
#                machine has it; the sanitizer refused the device (sandboxed containers often
#                are) or out of time is information, not a failure; a memcheck report fails
#   torch-*      bench/torch_gpu.py, last: PyTorch with fused Adam and cudnn.benchmark, eager
#                and with CUDA graphs, FP32 and TF32; then torch.compile (slow to compile)
# then bench/gpu_summary.py: steady state = median of epochs 2..n (epoch 1 alone for a
# one-epoch run), warm-up apart, every PyTorch column beside ours, the lab's verdict, graph
# and eager steps, the faults' times, the issue's targets. Without a GPU it says so and runs
# its skeleton (the lab and test_cuda report no GPU, the CPU self-test, a short CPU run
# through the same record and summary path, mpirun on the CPU). tests/gpu_check_test.sh runs
# this script on a fake carry folder (both branches, the environment, the order of the steps).
#
# Our programs get the carried libraries and the machine's CUDA libraries PREPENDED to the
# machine's own LD_LIBRARY_PATH (a wrapper program, `mb`): the driver (libcuda.so.1,
# libnvidia-ml.so.1) is loaded with dlopen, so `ldd` cannot show that a machine finds it only
# through LD_LIBRARY_PATH; replacing that would hide the GPU. Where the driver was found is
# logged, and a GPU that nvidia-smi sees but our programs do not heads the summary.
#
# Usage: bench/gpu_check.sh [CARRY_DIR]    default .carry/gpu
# Env:   OUT=folder for the results (default: a new temporary folder, printed), EPOCHS (1),
#        TORCH_EPOCHS (3), DATA (default CARRY_DIR/data), PYTHON (python3: the one with PyTorch),
#        BUDGET_S (290)
# Writes to OUT (few files come back from the device machine): summary.txt, lab.txt,
# results.json, steps.tsv, logs.tar.gz (every log, run record, lab JSON and PyTorch output).
set -uo pipefail

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
    [ -n "${gpu_note:-}" ] && echo "$gpu_note"
    [ "${have_gpu:-0}" = 1 ] || echo "NO GPU: the GPU runs were skipped; what follows is the skeleton's output"
    [ -n "${driver_line:-}" ] && echo "$driver_line"
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

# A line of steps.tsv: NAME EXIT SECONDS VERDICT.
record_step() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$logs/steps.tsv"; }

# Prints the step's command line (the carry and work folders abbreviated) and its limit; false
# when the budget has no room for it (then a skipped line is recorded).
announce() {  # NAME LIMIT TEXT...
  local name=$1 lim=$2
  shift 2
  if [ "$lim" -lt 5 ]; then
    record_step "$name" - 0 "skipped: budget spent"
    echo "== $name: skipped (budget spent)"
    return 1
  fi
  echo "== $name (limit ${lim} s): $*" | sed "s|$carry|CARRY|g; s|$work|WORK|g"
}

# step NAME SECONDS COMMAND...: runs it under its limit, output to logs/NAME.log; a line in
# steps.tsv either way (a step with no time left is skipped, not started).
step() {
  local name=$1 t0=$SECONDS rc lim verdict=ok
  lim=$(limit "$2")
  shift 2
  announce "$name" "$lim" "$@" || return 0
  timeout --kill-after=5 "$lim" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    verdict=$([ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "TIMED OUT" || echo "FAILED")
    failed=1
  fi
  record_step "$name" "$rc" "$((SECONDS - t0))" "$verdict"
  echo "   $verdict (exit $rc, $((SECONDS - t0)) s)"
  tail -n 3 "$logs/$name.log" | sed 's/^/   | /'
  write_summary
  return "$rc"
}

# fault NAME SECONDS EXPECTED_TEXT COMMAND...: a run that must FAIL (exit 1) with the text, in
# time; anything else (a pass, a hang, another message) is a failed check.
fault() {
  local name=$1 want=$3 t0=$SECONDS rc lim verdict
  lim=$(limit "$2")
  shift 3
  announce "$name" "$lim" "(must fail with '$want')" "$@" || return 0
  timeout --kill-after=5 "$lim" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q -- "$want" "$logs/$name.log"; then
    verdict="ok: ended in $((SECONDS - t0)) s with the expected message"
  else
    verdict="FAILED: exit $rc, expected exit 1 and '$want'"
    failed=1
  fi
  record_step "$name" "$rc" "$((SECONDS - t0))" "$verdict"
  echo "   $verdict"
  grep -m1 -- "$want" "$logs/$name.log" | cut -c1-300 | sed 's/^/   | /'
  write_summary
}

# --- the machine: libraries, driver, GPU ---------------------------------------------------

# The carried libraries: xz where the machine has a working one, else python3's lzma.
unpack_libs() {
  local unpack=1
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
}

# The GPU machine's own CUDA libraries (wheels: cudart, cuBLAS, cuDNN, NCCL), looked for where
# wheels and toolkits live, not in the whole file system: folders joined by ':'.
find_cuda_dirs() {
  local roots
  roots=$(timeout 20 "$python" -c "import site; print('\n'.join(site.getsitepackages() + [site.getusersitepackages()]))" \
    2> /dev/null)
  # shellcheck disable=SC2086  # one root per word
  timeout 40 find $roots /usr/local /opt /usr/lib/x86_64-linux-gnu -maxdepth 6 \
    \( -name 'libcudart.so.13' -o -name 'libcublas.so.13' -o -name 'libcublasLt.so.13' -o -name 'libcudnn.so.9' \
       -o -name 'libnccl.so.2' \) -print 2> /dev/null | xargs -r -n1 dirname | sort -u | paste -sd: -
}

# The wrapper our programs (and the carried mpirun) run through: the carried libraries first
# (Debian's libz, libgomp, libzstd, glib ...), then the machine's CUDA libraries, then the
# machine's own LD_LIBRARY_PATH as it is when the wrapper runs (never replaced: its driver may
# be found only there; no empty entry, which would mean the current folder). Only for them:
# python3 and PyTorch keep the machine's own. A program, not a shell function, so that
# timeout can run it.
write_mb_wrapper() {  # FILE LIBS
  cat > "$1" << EOF
#!/bin/sh
export LD_LIBRARY_PATH="$2\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$work/ompi" PMIX_INSTALL_PREFIX="$work/ompi/pmix"
export PATH="$work/ompi/bin:\$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_show_load_errors=0
exec "\$@"
EOF
  chmod +x "$1"
}

# Where the dynamic loader would find the driver's libraries for our programs (their
# LD_LIBRARY_PATH, then its cache, then the usual folders): one line per library.
driver_libs() {
  local lib dir found paths
  # shellcheck disable=SC2016  # expanded by the wrapper's shell
  paths=$("$mb" sh -c 'echo "$LD_LIBRARY_PATH"')
  for lib in libcuda.so.1 libnvidia-ml.so.1; do
    found=""
    IFS=: read -ra dirs <<< "$paths"
    for dir in "${dirs[@]}"; do
      [ -n "$dir" ] && [ -e "$dir/$lib" ] && found+=" $dir/$lib (LD_LIBRARY_PATH)"
    done
    for dir in $( (timeout 10 ldconfig -p 2> /dev/null || timeout 10 /sbin/ldconfig -p 2> /dev/null) |
      awk -v l="$lib" '$1 == l {print $NF}' | head -n 3); do
      found+=" $dir (ld.so cache)"
    done
    if [ -z "$found" ]; then
      for dir in /usr/lib/x86_64-linux-gnu /usr/lib64 /lib64 /usr/local/nvidia/lib64 /usr/lib/wsl/lib; do
        [ -e "$dir/$lib" ] && found+=" $dir/$lib (default folder)"
      done
    fi
    echo "$lib:${found:- not found}"
  done
}

# Writes logs/machine.txt (the GPU, the driver's libraries, what our programs see) and sets
# have_gpu, gpu_note (a GPU nvidia-smi sees and our programs do not), driver_line, mpi_ok,
# torch_ok and sanitizer (its path, or empty).
inspect_machine() {
  local smi_gpus=0 devices
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2> /dev/null | head -n1)
  if command -v nvidia-smi > /dev/null; then
    smi_gpus=$(timeout 15 nvidia-smi -L 2> /dev/null | grep -c '^GPU ')
  fi
  devices=$(timeout 30 "$mb" "$cli" devices 2>&1)
  driver_line="driver: $(driver_libs | paste -sd';' - | sed 's/;/; /g')"
  {
    echo "== $(date -u +%FT%TZ) $(hostname)"
    cat "$carry/BUILD_INFO"
    echo "== CUDA library folders: ${wheel_dirs:-none found}"
    echo "== the machine's LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-(unset)}; ours prepend $mb_libs"
    echo "== $driver_line"
    echo "== compute-sanitizer: ${sanitizer:-not found}"
    echo "== nvidia-smi: $smi_gpus GPU(s)"
    command -v nvidia-smi > /dev/null &&
      timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    grep -m1 'model name' /proc/cpuinfo
    echo "== libraries not found:"
    "$mb" ldd "$cli" "$tests" "$lab" | grep 'not found' | sort -u
    timeout 20 "$mb" "$cli" --version
    echo "$devices"
    timeout 60 "$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
  } > "$logs/machine.txt" 2>&1
  sed -n '1,40p' "$logs/machine.txt"
  if "$mb" ldd "$cli" "$tests" "$lab" | grep -q 'not found'; then
    echo "gpu_check.sh: libraries missing (above): the binaries cannot start here" | tee -a "$logs/machine.txt"
    failed=1
  fi
  have_gpu=0
  grep -q '^cuda:0' <<< "$devices" && have_gpu=1
  if [ "$smi_gpus" -gt 0 ] && [ "$have_gpu" != 1 ]; then
    gpu_note="GPU NOT SEEN: nvidia-smi sees $smi_gpus GPU(s) but mirrorbench-cli devices sees none ($(grep -m1 '^gpu' <<< "$devices" | tr -s ' ')); $driver_line"
    echo "$gpu_note" | tee -a "$logs/machine.txt"
    failed=1
  fi
  mpi_ok=0
  if timeout 20 "$mb" mpirun -np 1 true > "$logs/mpirun-probe.log" 2>&1; then
    mpi_ok=1
  else
    echo "mpirun cannot run here (log: mpirun-probe.log): the multi-process part is skipped" | tee -a "$logs/machine.txt"
  fi
  torch_ok=0
  timeout 60 "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" > /dev/null 2>&1 &&
    torch_ok=1
  return 0
}

# compute-sanitizer over the quick lab. In a sandboxed container it may be refused the device
# (no debugger interface, no profiling permission): its own "========= Error" lines without
# any memcheck report make an information line, not a failure, and so does running out of
# time (memcheck is slow; that finds nothing). A memcheck report, or the lab's own failure,
# fails the check.
sanitizer_step() {
  local name=sanitizer-lab t0=$SECONDS rc lim verdict log=$logs/sanitizer-lab.log
  [ -n "$sanitizer" ] || return 0
  lim=$(limit 45)
  announce "$name" "$lim" "$mb" "$sanitizer" --tool memcheck "$lab" --quick --no-steps --batches 3 --reps 1 ||
    return 0
  timeout --kill-after=5 "$lim" "$mb" "$sanitizer" --tool memcheck --error-exitcode 1 "$lab" --quick --no-steps \
    --batches 3 --reps 1 > "$log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    verdict=ok
  elif grep -qE '^========= (Invalid|Program hit|Out-of-range|Malloc|Leaked)|ERROR SUMMARY: [1-9]' "$log"; then
    verdict="FAILED: memcheck found errors"
    failed=1
  elif grep -qE '^========= (Error|Internal Sanitizer Error)' "$log"; then
    verdict="info: compute-sanitizer cannot instrument the device here, not a failure ($(grep -m1 -E \
      '^========= (Error|Internal Sanitizer Error)' "$log" | cut -c1-160))"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    verdict="info: timed out under memcheck after $((SECONDS - t0)) s, no error reported so far"
  else
    verdict="FAILED"
    failed=1
  fi
  record_step "$name" "$rc" "$((SECONDS - t0))" "$verdict"
  echo "   $verdict (exit $rc, $((SECONDS - t0)) s)"
  write_summary
}

# --- the check ------------------------------------------------------------------------------

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

# With a GPU, by value: the kernels, the assertions, one epoch of each path, the processes,
# the simulated replicas, the faults, the sanitizer, PyTorch. Limits sum to more than the
# budget: a step that runs long costs the ones after it, never the summary.
gpu_steps() {
  echo "GPU found: running the check"
  # --cudnn-tune 1: at most 1 s per step shape for the warm-ups' algorithm measurement instead
  # of 3 (test_cuda, which warms up about 20 times, gives its engines the same); measuring every
  # candidate usually takes a fraction of it, and a cut-short measurement would leave passes to
  # the heuristic, which test_cuda's "measured" check would report.
  step lab 60 "$mb" "$lab" --cudnn-tune 1 --json "$work/lab.json"
  step test_cuda 75 "$mb" "$tests"
  train fp32 30 cuda:0
  train fused 30 cuda:0 --cuda-path fused
  train tf32 30 cuda:0 --precision tf32
  if [ "$mpi_ok" = 1 ]; then
    step mb-nccl 30 "$mb" mpirun -np 1 "$cli" train --devices cuda:local --batch 128 --epochs "$epochs" --data "$data" \
      --json "$work/mb-nccl.json" --verbose
  fi
  train cuda0x2 30 cuda:0,cuda:0
  # Faults: a stall is noticed at the next statistics read (--timeout 5 s) and released; a hang
  # leaves a thread in the driver (cudaFree behind a kernel that spins 4 x 5 s) for 2 x 5 s more.
  fault fault-stall 25 "has not finished within" "$mb" "$cli" train --inject-fault stall:40 --cudnn-tune 0 \
    --devices cuda:0 --epochs 1 --timeout 5 --data "$data" --verbose
  fault fault-hang 35 "stuck inside the device driver" "$mb" "$cli" train --inject-fault hang:40 --cudnn-tune 0 \
    --devices cuda:0 --epochs 1 --timeout 5 --data "$data" --verbose
  fault fault-abort 20 "injected abort" "$mb" "$cli" train --inject-fault abort:40:1 --cudnn-tune 0 \
    --devices cuda:0,cuda:0 --epochs 1 --timeout 5 --data "$data" --verbose
  sanitizer_step
  if [ "$torch_ok" = 1 ]; then
    for p in fp32 tf32; do torch_run "$p" eager,graphs 50 main; done
    torch_run fp32 compile 90 compile
  fi
}

# Without a GPU: the same programs, libraries, record and summary path on the CPU.
skeleton_steps() {
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
}

main() {
  cd "$(dirname "$0")/.." || exit 2
  carry=${1:-.carry/gpu}
  if [ ! -x "$carry/bin/mirrorbench-cli" ] || [ ! -f "$carry/libs.tar.xz" ]; then
    echo "gpu_check.sh: $carry is not a carry folder: run bench/gpu_carry.sh first (on any machine)" >&2
    exit 2
  fi
  carry=$(cd "$carry" && pwd)
  out=${OUT:-$(mktemp -d)}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  epochs=${EPOCHS:-1}
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
  cli=$carry/bin/mirrorbench-cli
  lab=$carry/bin/cuda_lab
  tests=$carry/bin/test_cuda

  unpack_libs
  wheel_dirs=$(find_cuda_dirs)
  mb_libs="$work/lib${wheel_dirs:+:$wheel_dirs}"
  mb=$work/mb
  write_mb_wrapper "$mb" "$mb_libs"
  inspect_machine
  write_summary
  if [ "$have_gpu" = 1 ]; then gpu_steps; else skeleton_steps; fi

  write_summary
  tar -C "$work" -czf "$out/logs.tar.gz" logs
  cat "$out/summary.txt"
  echo "results in $out"
  exit "$failed"
}

main "$@"
