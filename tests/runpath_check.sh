#!/usr/bin/env bash
# Every ELF program and library the build made (bin/), and the same after `cmake --install`,
# must have a RUNPATH/RPATH without an empty or relative entry: an empty entry means the
# current directory, so a library planted where the program is started would be loaded.
# Usage: runpath_check.sh BUILD_DIR   (readelf from binutils; exit 1 naming each offender)
set -uo pipefail
build=${1:?usage: runpath_check.sh BUILD_DIR}
command -v readelf > /dev/null || { echo "runpath_check: readelf not found (binutils)"; exit 1; }
install_dir=$(mktemp -d)
trap 'rm -rf "$install_dir"' EXIT
if ! cmake --install "$build" --prefix "$install_dir" > "$install_dir.log" 2>&1; then
  echo "runpath_check: cmake --install failed:"; cat "$install_dir.log"; rm -f "$install_dir.log"; exit 1
fi
rm -f "$install_dir.log"

bad=0 checked=0
check() {  # FILE: its dynamic section's search paths
  local file=$1 paths entry
  readelf -h "$file" > /dev/null 2>&1 || return 0   # not ELF (scripts)
  checked=$((checked + 1))
  paths=$(readelf -d "$file" 2> /dev/null | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
  [ -z "$paths" ] && return 0
  # An entry list that starts or ends with ':' or holds '::' has an empty entry.
  if [[ "$paths" == :* || "$paths" == *: || "$paths" == *::* ]]; then
    echo "EMPTY ENTRY (the current directory) in $file: [$paths]"; bad=1; return 0
  fi
  IFS=: read -ra entries <<< "$paths"
  for entry in "${entries[@]}"; do
    case $entry in
      /*|'$ORIGIN'*) ;;
      *) echo "RELATIVE ENTRY '$entry' in $file: [$paths]"; bad=1 ;;
    esac
  done
}
while IFS= read -r -d '' f; do check "$f"; done < <(find "$build/bin" "$install_dir" -type f -perm -u+x -print0)
echo "runpath_check: $checked ELF file(s) checked in $build/bin and an install of $build"
[ "$checked" -gt 0 ] || { echo "runpath_check: nothing to check"; exit 1; }
exit "$bad"
