#!/usr/bin/env bash
# bench/balance_replay on a real lock-step trace: a 2x straggler (64 steps of cpu:2) must make
# the real rule move shares off the even split, and the modelled balanced steps must be shorter
# than lock-step's (the straggler's waiting is a third of its pair's time: far above any noise).
# A balanced run's trace and a missing file are refused with a message and a non-zero exit.
# Usage: balance_replay_check.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: balance_replay_check.sh BIN_DIR}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "balance_replay_check: $*"; exit 1; }
"$bin/mirrorbench-cli" train --devices cpu:2 --slow-replica 1:2 --epochs 1 --limit-train 8192 --limit-val 512 \
  --trace "$dir/lock.json" > /dev/null || fail "the traced lock-step run failed"
out=$("$bin/balance_replay" "$dir/lock.json") || fail "balance_replay failed: $out"
echo "$out"
grep -q "^  from step [0-9]*: [0-9]* / [0-9]*$" <<< "$out" || fail "no share change for a 2x straggler"
ratio=$(sed -n 's/.*balanced \/ lock-step: time \([0-9.]*\),.*/\1/p' <<< "$out")
[[ -n "$ratio" ]] && awk -v r="$ratio" 'BEGIN { exit !(r < 0.95) }' || fail "balanced / lock-step = '$ratio', want < 0.95"
"$bin/mirrorbench-cli" train --devices cpu:2 --balance --epochs 1 --limit-train 8192 --limit-val 512 \
  --trace "$dir/bal.json" > /dev/null || fail "the traced balanced run failed"
msg=$("$bin/balance_replay" "$dir/bal.json" 2>&1) && fail "a balanced run's trace was replayed"
grep -q "balanced run" <<< "$msg" || fail "unclear refusal: $msg"
msg=$("$bin/balance_replay" "$dir/none.json" 2>&1) && fail "a missing trace was replayed"
grep -q "cannot read" <<< "$msg" || fail "unclear refusal: $msg"
echo "balance_replay_check: passed"
