#!/usr/bin/env bash
# bench/gpu_check.sh on a fake carry folder, no GPU needed (issue 30): fake mirrorbench-cli,
# test_cuda, cuda_lab, mpirun, nvidia-smi, compute-sanitizer and python (PyTorch) that log how
# they were started and answer as the real ones would. The fake CLI sees a GPU only when the
# fake driver's folder is on its LD_LIBRARY_PATH, as a machine whose libcuda.so.1 is found only
# that way (it is dlopen'ed). Checks: the machine's LD_LIBRARY_PATH is prepended to, never
# replaced (and python keeps it untouched); where libcuda was found is logged; the GPU steps
# run in the order of value with their settings (short tuning budgets, one epoch, the fused
# path); a refused compute-sanitizer is information, a memcheck finding a failure; a GPU that
# nvidia-smi sees and the CLI does not heads the summary; the skeleton's order; a spent budget
# skips steps and still writes the summary. Run by ctest (gpu_check_test); about a minute.
# Usage: gpu_check_test.sh [REPO_DIR]   (default: the folder above this script's)
set -uo pipefail
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() {  # DESCRIPTION COMMAND...: the command must succeed
  local what=$1
  shift
  "$@" || fail "$what"
}

# --- the fakes -------------------------------------------------------------------------------

make_fakes() {
  local carry=$tmp/carry stage=$tmp/stage
  mkdir -p "$carry/bin" "$carry/data" "$stage/lib" "$stage/ompi/bin" "$tmp/path" "$tmp/driver"
  : > "$tmp/driver/libcuda.so.1"
  : > "$tmp/driver/libnvidia-ml.so.1"
  : > "$stage/lib/libmbfake.so.1"
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    : > "$carry/data/$f.gz"
  done
  echo "built (fake carry for gpu_check_test.sh)" > "$carry/BUILD_INFO"

  # Every fake program logs its name, arguments and the settings the check is about.
  cat > "$tmp/log.sh" << 'EOF'
log() {
  local carried=no
  [ -e "${LD_LIBRARY_PATH%%:*}/libmbfake.so.1" ] && carried=yes
  echo "$(basename "$0") $* | LD=${LD_LIBRARY_PATH-(unset)} | carried=$carried" >> "$FAKE_LOG"
}
EOF
  cat > "$carry/bin/mirrorbench-cli" << 'EOF'
#!/usr/bin/env bash
. "$FAKE_DIR/log.sh"
log "$@"
gpu() { [ -n "${FAKE_DRIVER_DIR:-}" ] && [[ ":${LD_LIBRARY_PATH:-}:" == *":$FAKE_DRIVER_DIR:"* ]]; }
case $1 in
  --version) echo "mirrorbench-cli 0.1.0 (fake), CUDA 13.0, cuDNN 9.19.0, NCCL 2.28.9" ;;
  devices)
    echo "cpu      2 core(s): fake"
    if gpu; then echo "cuda:0   NVIDIA H200 (fake)"; else echo "gpu      none usable: no NVIDIA driver found"; fi ;;
  selftest) echo "selftest: ok" ;;
  train)
    json="" precision=fp32 devices="" path=cudnn fault=""
    while [ $# -gt 0 ]; do
      case $1 in
        --json) json=$2; shift ;; --precision) precision=$2; shift ;; --devices) devices=$2; shift ;;
        --cuda-path) path=$2; shift ;; --inject-fault) fault=$2; shift ;;
      esac
      shift
    done
    case $fault in
      stall:*) echo "cuda:0 NVIDIA H200: the device has not finished within 5 s (--timeout)"; exit 1 ;;
      hang:*) echo "replica 0 is stuck inside the device driver"; exit 1 ;;
      abort:*) echo "replica 1: injected abort"; exit 1 ;;
    esac
    [ -n "$json" ] && cat > "$json" << JSON
{"config": {"devices": "$devices", "precision": "$precision", "communicator": "nccl", "replicas": 1,
 "train_size": 60000},
 "epochs": [{"epoch": 1, "time_s": 0.05, "val_acc": 0.87, "train_loss": 0.4, "allreduce_s": 0.0}],
 "warmup_s": 2.0, "replicas_in_sync": true, "status": "completed", "error": "",
 "engine": {"path": "$path", "graph_batches": [128, 96], "eager_batches": [],
  "graph_steps": 469, "eager_steps": 0,
  "graph_nodes": {"kernel": 9, "memset": 0, "memcpy": 0, "other": 0, "total": 9}, "conv": []}}
JSON
    ;;
esac
exit 0
EOF
  cat > "$carry/bin/cuda_lab" << 'EOF'
#!/usr/bin/env bash
. "$FAKE_DIR/log.sh"
log "$@"
sleep "${FAKE_LAB_SLEEP:-0}"
while [ $# -gt 0 ]; do
  [ "$1" = --json ] && echo '[{"name": "Adam (fused)", "group": "own kernel", "n": 128, "validated": true, "passed": true,
    "error": false, "detail": "0", "time_us": 10.0, "gflops": 1, "gbs": 1, "peak_share": 0.1}]' > "$2"
  shift
done
echo "cuda_lab: 1 of 1 checks passed"
EOF
  cat > "$carry/bin/test_cuda" << 'EOF'
#!/usr/bin/env bash
. "$FAKE_DIR/log.sh"
log "$@"
echo "Totals: 40 passed, 0 failed, 0 skipped"
EOF
  cat > "$stage/ompi/bin/mpirun" << 'EOF'
#!/usr/bin/env bash
. "$FAKE_DIR/log.sh"
log "$@"
[ "$1" = -np ] && shift 2
exec "$@"
EOF
  cat > "$tmp/path/nvidia-smi" << 'EOF'
#!/usr/bin/env bash
case $1 in
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-fake)" ;;
  *) echo "name, driver_version, memory.total [MiB], clocks.max.sm [MHz]"; echo "NVIDIA H200, 580.00, 143771 MiB, 1980 MHz" ;;
esac
EOF
  cat > "$tmp/path/compute-sanitizer" << 'EOF'
#!/usr/bin/env bash
. "$FAKE_DIR/log.sh"
log "$@"
case ${FAKE_SANITIZER:-} in
  refuse) echo "========= Error: Target application terminated before first instrumented API call"; exit 255 ;;
  finding) echo "========= Invalid __global__ read of size 4 bytes"; echo "========= ERROR SUMMARY: 1 error"; exit 1 ;;
esac
while [[ ${1:-} == --* ]]; do shift 2; done
exec "$@"
EOF
  # python3 as it is, but for PyTorch (answered from here) and with its environment logged.
  cat > "$tmp/path/fake-python" << 'EOF'
#!/usr/bin/env bash
. "$FAKE_DIR/log.sh"
log "$@"
if [[ "$*" == *"import torch"* ]]; then
  [ "${FAKE_TORCH:-1}" = 1 ] || exit 1
  echo "torch 2.9.0 (fake) cuda 13.0 True"
  exit 0
fi
if [[ "${1:-}" == bench/torch_gpu.py ]]; then
  echo '{"mode": "torch eager NVIDIA H200 fp32", "warmup_s": 3.0, "adam": "fused"}'
  for e in 1 2 3; do
    echo "{\"mode\": \"torch eager NVIDIA H200 fp32\", \"epoch\": $e, \"time_s\": 0.6, \"val_acc\": 0.87, \"train_loss\": 0.4, \"images\": 60000}"
  done
  exit 0
fi
exec python3 "$@"
EOF
  chmod +x "$carry/bin/"* "$stage/ompi/bin/mpirun" "$tmp/path/"*
  tar -C "$stage" -cJf "$carry/libs.tar.xz" lib ompi
}

# run NAME [VAR=VALUE...]: the check on the fake carry, results in $tmp/NAME; its exit status
# in $tmp/NAME/rc, the fakes' log in $tmp/NAME/fake.log, its logs unpacked in $tmp/NAME/logs.
run() {
  local dir=$tmp/$1
  shift
  mkdir -p "$dir/out"
  : > "$dir/fake.log"
  env -u LD_LIBRARY_PATH FAKE_DIR="$tmp" FAKE_LOG="$dir/fake.log" OUT="$dir/out" PYTHON="$tmp/path/fake-python" \
    PATH="$tmp/path:$PATH" "$@" bash "$repo/bench/gpu_check.sh" "$tmp/carry" > "$dir/stdout" 2>&1
  echo $? > "$dir/rc"
  tar -C "$dir" -xzf "$dir/out/logs.tar.gz" 2> /dev/null
}

steps_of() { cut -f1 "$tmp/$1/out/steps.tsv" | paste -sd' ' -; }
rc_of() { cat "$tmp/$1/rc"; }
# The fakes' log lines of one program whose arguments contain TEXT.
calls() { grep -F -- "$2" "$tmp/$1/fake.log"; }

# --- the checks ------------------------------------------------------------------------------

make_fakes
driver=$tmp/driver
machine_path="$driver:/opt/machine/lib"

# A: the GPU's driver found only through the machine's LD_LIBRARY_PATH; the sanitizer works.
run gpu LD_LIBRARY_PATH="$machine_path" FAKE_DRIVER_DIR="$driver"
[ "$(rc_of gpu)" = 0 ] || fail "gpu: exit $(rc_of gpu), expected 0 ($(tail -n 5 "$tmp/gpu/stdout"))"
want="lab test_cuda mb-fp32 mb-fused mb-tf32 mb-nccl mb-cuda0x2 fault-stall fault-hang fault-abort sanitizer-lab \
torch-fp32-main torch-tf32-main torch-fp32-compile"
[ "$(steps_of gpu)" = "$want" ] || fail "gpu: steps '$(steps_of gpu)', expected '$want'"
# Our programs: the carried libraries first, the machine's path last, no empty entry.
ours=$(grep -E '^(mirrorbench-cli|cuda_lab|test_cuda|mpirun) ' "$tmp/gpu/fake.log")
[ -n "$ours" ] || fail "gpu: no program of ours was started"
while IFS= read -r line; do
  ld=""
  [[ "$line" =~ \|\ LD=([^|]*)\ \| ]] && ld=${BASH_REMATCH[1]}
  [[ "$ld" == *":$machine_path" ]] || fail "gpu: LD_LIBRARY_PATH '$ld' does not end with the machine's '$machine_path'"
  [[ "$ld" == *::* || "$ld" == :* || "$ld" == *: ]] && fail "gpu: empty entry in '$ld'"
  [[ "$line" == *"carried=yes"* ]] || fail "gpu: the carried libraries are not first: $line"
done <<< "$ours"
# python (PyTorch, the summary) keeps the machine's own.
while IFS= read -r line; do
  [[ "$line" == *"| LD=$machine_path |"* ]] || fail "gpu: python's environment was changed: $line"
done < <(grep '^fake-python ' "$tmp/gpu/fake.log")
expect "gpu: where libcuda was found is logged" \
  grep -q "libcuda.so.1: $driver/libcuda.so.1 (LD_LIBRARY_PATH)" "$tmp/gpu/logs/machine.txt"
expect "gpu: the summary names the driver" grep -q "^driver: libcuda.so.1: $driver" "$tmp/gpu/out/summary.txt"
grep -q "NO GPU\|GPU NOT SEEN" "$tmp/gpu/out/summary.txt" && fail "gpu: the summary says there is no GPU"
# The settings of each step.
expect "gpu: the lab with a short tuning budget" grep -q '^cuda_lab --cudnn-tune 1 --json ' "$tmp/gpu/fake.log"
expect "gpu: test_cuda early (its own 1 s budget)" grep -q '^test_cuda  ' "$tmp/gpu/fake.log"
expect "gpu: one FP32 epoch, cudnn path" grep -q 'train --devices cuda:0 --batch 128 --epochs 1 .*mb-fp32.json --verbose |' \
  "$tmp/gpu/fake.log"
expect "gpu: one epoch on the fused path" grep -q 'train --devices cuda:0 --batch 128 --epochs 1 .*mb-fused.json --verbose --cuda-path fused |' \
  "$tmp/gpu/fake.log"
expect "gpu: one TF32 epoch, cudnn path" grep -q 'mb-tf32.json --verbose --precision tf32 |' "$tmp/gpu/fake.log"
# No MB_* variable anywhere: every setting is an option of the command line.
grep -q 'MB_' "$repo/bench/gpu_check.sh" && fail "gpu: gpu_check.sh still names an MB_ variable"
expect "gpu: the NCCL run under mpirun" grep -q '^mpirun -np 1 .*--devices cuda:local' "$tmp/gpu/fake.log"
expect "gpu: the sanitizer over the quick lab" grep -q '^cuda_lab --quick --no-steps --batches 3' "$tmp/gpu/fake.log"
for f in stall hang abort; do
  expect "gpu: fault-$f ended as expected" grep -q "^fault-$f	1	[0-9]*	ok: ended" "$tmp/gpu/out/steps.tsv"
done
expect "gpu: the fault runs skip the tuning" grep -q 'train --inject-fault hang:40 --cudnn-tune 0 ' "$tmp/gpu/fake.log"
expect "gpu: the summary reads the fake records" grep -q 'mirrorbench fused' "$tmp/gpu/out/summary.txt"
expect "gpu: graph and eager steps are shown" grep -q '469 steps as graphs, 0 eager' "$tmp/gpu/out/summary.txt"
# Every step's own limit, the whole within the budget.
limits=$(sed -n 's/^== [a-z0-9_-]* (limit \([0-9]*\) s).*/\1/p' "$tmp/gpu/stdout")
[ "$(wc -l <<< "$limits")" -eq 14 ] || fail "gpu: $(wc -l <<< "$limits") step limits printed, expected 14"
expect "gpu: the budget is 290 s" grep -q 'of the 290 s budget' "$tmp/gpu/out/summary.txt"

# B: compute-sanitizer refused (a sandboxed container): information, not a failure.
run refused LD_LIBRARY_PATH="$machine_path" FAKE_DRIVER_DIR="$driver" FAKE_SANITIZER=refuse FAKE_TORCH=0
[ "$(rc_of refused)" = 0 ] || fail "refused: exit $(rc_of refused), expected 0"
want="lab test_cuda mb-fp32 mb-fused mb-tf32 mb-nccl mb-cuda0x2 fault-stall fault-hang fault-abort sanitizer-lab"
[ "$(steps_of refused)" = "$want" ] || fail "refused: steps '$(steps_of refused)', expected '$want'"
expect "refused: the sanitizer's line says why" grep -q '^sanitizer-lab	255	[0-9]*	info: .*first instrumented API call' \
  "$tmp/refused/out/steps.tsv"

# B': a memcheck finding is a failure.
run finding LD_LIBRARY_PATH="$machine_path" FAKE_DRIVER_DIR="$driver" FAKE_SANITIZER=finding FAKE_TORCH=0
[ "$(rc_of finding)" = 1 ] || fail "finding: exit $(rc_of finding), expected 1"
expect "finding: the sanitizer's line fails" grep -q '^sanitizer-lab	1	[0-9]*	FAILED: memcheck found errors' \
  "$tmp/finding/out/steps.tsv"

# C: nvidia-smi sees the GPU, our programs do not (the driver's folder is not on their path).
run unseen FAKE_DRIVER_DIR="$driver"
[ "$(rc_of unseen)" = 1 ] || fail "unseen: exit $(rc_of unseen), expected 1"
expect "unseen: said first in the summary" \
  grep -q '^GPU NOT SEEN: nvidia-smi sees 1 GPU(s) but mirrorbench-cli devices sees none' <(head -n1 "$tmp/unseen/out/summary.txt")
[ "$(steps_of unseen)" = "lab test_cuda selftest mb-skeleton mb-mpi-cpu" ] ||
  fail "unseen: steps '$(steps_of unseen)', expected the skeleton's"

# D: no GPU and no LD_LIBRARY_PATH at all: the skeleton; no empty entry in ours.
run skeleton PATH="${PATH//$tmp\/path:/}"
[ "$(rc_of skeleton)" = 0 ] || fail "skeleton: exit $(rc_of skeleton), expected 0 ($(tail -n 5 "$tmp/skeleton/stdout"))"
[ "$(steps_of skeleton)" = "lab test_cuda selftest mb-skeleton mb-mpi-cpu" ] ||
  fail "skeleton: steps '$(steps_of skeleton)', expected the skeleton's"
grep -q 'LD=[^|]*: |' "$tmp/skeleton/fake.log" && fail "skeleton: a trailing ':' (the current folder) in LD_LIBRARY_PATH"
expect "skeleton: says so" grep -q '^NO GPU' "$tmp/skeleton/out/summary.txt"

# E: a budget spent by a slow first step: the rest is skipped, the summary still written.
run budget LD_LIBRARY_PATH="$machine_path" FAKE_DRIVER_DIR="$driver" BUDGET_S=25 FAKE_LAB_SLEEP=60
expect "budget: the lab timed out" grep -q '^lab	124	[0-9]*	TIMED OUT' "$tmp/budget/out/steps.tsv"
expect "budget: later steps skipped" grep -q '^fault-hang	-	0	skipped: budget spent' "$tmp/budget/out/steps.tsv"
expect "budget: the summary is written" grep -q 'of the 25 s budget' "$tmp/budget/out/summary.txt"

if [ "$failures" -gt 0 ]; then
  echo "gpu_check_test: $failures check(s) failed"
  exit 1
fi
echo "gpu_check_test: every check passed (GPU, refused sanitizer, memcheck finding, unseen GPU, skeleton, spent budget)"
