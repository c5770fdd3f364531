#!/usr/bin/env bash
# No function over 120 lines outside the kernels and the tests: clang-tidy's
# readability-function-size over every C++ file of app/, ui/, core/ and bench/ that the build
# compiles (its compile_commands.json), in parallel. Prints each offender; exit 1 if any.
# Usage: scripts/function-size.sh [BUILD_DIR]   (default build; needs clang-tidy)
# Kernels are exempt (one loop nest per function is their clearest form): the Highway kernels
# of core/backends/onednn/ listed below, and the CUDA sources (.cu, not C++ files here).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
limit=120
command -v clang-tidy > /dev/null || { echo "function-size: clang-tidy is not installed (Debian: clang-tidy)" >&2; exit 2; }
[[ -f $build/compile_commands.json ]] || { echo "function-size: no $build/compile_commands.json: configure first" >&2; exit 2; }

# clang-tidy reads the compile commands without GCC's precompiled headers (-include
# cmake_pch.hxx): clang cannot load a .gch, and would parse Qt's umbrella headers in every file.
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
mapfile -t files < <(python3 - "$build/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json, os, re, sys
root = os.getcwd()
entries = json.load(open(sys.argv[1]))
for e in entries:
    e["command"] = re.sub(r" -include \S*cmake_pch\.hxx| -Winvalid-pch", "", e["command"])
json.dump(entries, open(sys.argv[2], "w"))
KERNELS = {f"core/backends/onednn/{k}.cpp" for k in ("adam_kernel", "blocked_pool", "conv1_pool", "winograd_conv2")}
seen = set()
for entry in entries:
    f = os.path.relpath(os.path.join(entry["directory"], entry["file"]), root)
    if not f.endswith(".cpp") or f in seen or not re.match(r"(app|ui|core|bench)/", f):
        continue
    if f in KERNELS:
        continue
    seen.add(f)
    print(f)
PY
)
config="{Checks: '-*,readability-function-size', WarningsAsErrors: '', CheckOptions: [{key: readability-function-size.LineThreshold, value: $limit}]}"
report=$(printf '%s\n' "${files[@]}" |
         xargs -P "$(nproc)" -n 4 clang-tidy -p "$db" --quiet --config="$config" \
               --header-filter="^$PWD/(app|ui|core|bench)/" 2>/dev/null |
         grep -E "warning: function .* exceeds recommended size" | sort -u || true)
echo "function-size: ${#files[@]} files, limit $limit lines"
if [[ -n $report ]]; then
  echo "$report"
  echo "function-size: $(grep -c . <<< "$report") functions over $limit lines" >&2
  exit 1
fi
echo "function-size: none over $limit lines"
