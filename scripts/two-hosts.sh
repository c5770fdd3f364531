#!/usr/bin/env bash
# Two emulated hosts on this machine, for the multi-machine tests and benchmarks: hostA and
# hostB are each a network + UTS namespace (their own hostname) joined by one veth pair, with
# addresses on that pair only (10.213.0.1 and 10.213.0.2, nothing routed anywhere else), each
# on a CPU of its own (a cpuset cgroup where cgroup v1's cpuset is mounted, and taskset), and an
# rsh agent for Open MPI that runs a command inside a host, as ssh would on a real machine.
#
#   scripts/two-hosts.sh up DIR          make them; DIR gets hostfile, rsh-agent, mpi.env, ready
#                                        (or skip-reason, exit 77, when they cannot be made here)
#   scripts/two-hosts.sh down DIR        remove everything `up` made (kills what still runs in
#                                        the hosts, by pid); safe to repeat, safe after a failure
#   scripts/two-hosts.sh run DIR H CMD   run CMD inside host H (hostA or hostB)
#   scripts/two-hosts.sh shape DIR RATE [DELAY]   shape both ends of the veth: netem rate/delay
#                                        where the kernel has netem, else tbf (rate only); `off`
#
# The agent gives a host's commands the variables TWO_HOSTS_<host>_<NAME> of the caller's
# environment as NAME (e.g. TWO_HOSTS_hostB_MIRRORBENCH_DATA=/x): one host can be pointed at
# other files, as two machines' disks differ. Needs root (ip netns, cgroups) and iproute2.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
self="$here/$(basename "$0")"
# shellcheck source=netns-mount.sh
source "$here/netns-mount.sh"
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 up|down|run|shape DIR ..." >&2; exit 2; }

hosts=(hostA hostB)
declare -A addr=([hostA]=10.213.0.1 [hostB]=10.213.0.2)
dev=eth-mb
cpuset_root=/sys/fs/cgroup/cpuset

skip() {  # reason: the fixture cannot exist here; the tests read the reason and skip
  mkdir -p "$dir"
  echo "$1" > "$dir/skip-reason"
  echo "two-hosts: skipped: $1" >&2
  exit 77
}

state() { cat "$dir/state/$1" 2>/dev/null || true; }

# Each host's CPU: the first two CPUs this process may use (one each), or both on the one.
host_cpu() {
  local cpus
  cpus=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))' 2>/dev/null ||
         seq -s' ' 0 $(($(nproc) - 1)))
  read -r -a list <<< "$cpus"
  if [ "$1" = hostA ]; then echo "${list[0]}"; else echo "${list[1]:-${list[0]}}"; fi
}

do_down() {
  rm -f "$dir/skip-reason"
  [ -d "$dir/state" ] || { rmdir "$dir" 2>/dev/null || true; return 0; }
  local tag
  tag=$(state tag)
  for h in "${hosts[@]}"; do
    local cg
    cg=$(state "cgroup-$h")
    if [ -n "$cg" ] && [ -d "$cg" ]; then
      # What the tests started in this host and left running (a failed test): end it by pid.
      for _ in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(cat "$cg/tasks" 2>/dev/null || true)
        [ -z "$pids" ] && break
        for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
        sleep 0.2
      done
      rmdir "$cg" 2>/dev/null || echo "two-hosts: could not remove $cg" >&2
    fi
    local ns="mb-$tag-$h"
    if [ -n "$tag" ] && [ -e "/run/netns/$ns" ]; then
      # Processes still inside the namespace (taskset only: no cgroup to find them by).
      for p in $(ip netns pids "$ns" 2>/dev/null || true); do kill -9 "$p" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true   # removes its end of the veth, and so the pair
    fi
    local uts="$dir/state/$h.uts"
    if mountpoint -q "$uts" 2>/dev/null; then umount "$uts" || umount -l "$uts"; fi
  done
  netns_release_mount "$dir/state"
  rm -rf "$dir/state" "$dir/ready" "$dir/hostfile" "$dir/rsh-agent" "$dir/mpi.env"
  rmdir "$dir" 2>/dev/null || true
}

do_up() {
  mkdir -p "$dir"
  rm -f "$dir/skip-reason"
  [ "$(id -u)" -eq 0 ] || skip "not root: two hosts need network namespaces and a veth pair (run the tests as root)"
  command -v ip > /dev/null || skip "ip is not installed (Debian: iproute2)"
  command -v nsenter > /dev/null && command -v unshare > /dev/null || skip "nsenter/unshare missing (Debian: util-linux)"
  do_down   # what an earlier run left, if it was killed before its clean-up
  mkdir -p "$dir/state"
  local tag
  tag=$(printf '%04x' $((RANDOM % 65536)))
  echo "$tag" > "$dir/state/tag"
  trap 'echo "two-hosts: set-up failed, removing what was made" >&2; do_down' ERR
  netns_note_mount "$dir/state"
  for h in "${hosts[@]}"; do
    ip netns add "mb-$tag-$h" || skip "cannot make a network namespace here (ip netns add failed)"
    touch "$dir/state/$h.uts"
    unshare --uts="$dir/state/$h.uts" hostname "$h" || skip "cannot make a UTS namespace here"
    # Entering a namespace remounts / as a slave; that fails where / is no mount point (a chroot).
    ip -n "mb-$tag-$h" link set lo up 2> /dev/null ||
      { do_down; skip "cannot enter a network namespace here (ip -n failed: / is not a mount point, e.g. in a chroot)"; }
    host_cpu "$h" > "$dir/state/cpu-$h"
    if [ -w "$cpuset_root" ] && [ -f "$cpuset_root/cpuset.cpus" ]; then
      local cg="$cpuset_root/mb-$tag-$h"
      mkdir "$cg"
      echo "$cg" > "$dir/state/cgroup-$h"
      cat "$dir/state/cpu-$h" > "$cg/cpuset.cpus"
      cat "$cpuset_root/cpuset.mems" > "$cg/cpuset.mems"
    fi
  done
  # The pair is made inside the namespaces: the machine's own network never sees it.
  ip -n "mb-$tag-hostA" link add "$dev" type veth peer name "$dev" netns "mb-$tag-hostB"
  for h in "${hosts[@]}"; do
    ip -n "mb-$tag-$h" addr add "${addr[$h]}/30" dev "$dev"
    ip -n "mb-$tag-$h" link set "$dev" up
  done
  # Reachable before a test relies on it (the link takes a moment to come up): a connection
  # to a closed port of hostB is refused once packets flow.
  local ok=0
  for _ in $(seq 1 50); do
    local said
    said=$(timeout 1 ip netns exec "mb-$tag-hostA" bash -c "exec 3<>/dev/tcp/${addr[hostB]}/9" 2>&1 || true)
    if [[ "$said" == *refused* ]]; then
      ok=1
      break
    fi
    sleep 0.1
  done
  [ "$ok" = 1 ] || { echo "two-hosts: hostB does not answer hostA over the veth" >&2; false; }

  # By name, as on real machines (Open MPI's messages then name the host): the agent knows
  # them, and Open MPI's processes reach each other by the addresses they publish.
  printf 'hostA slots=1\nhostB slots=1\n' > "$dir/hostfile"
  printf '#!/bin/sh\n# Open MPI rsh agent: HOST COMMAND... runs inside that emulated host.\nexec %q agent %q "$@"\n' \
    "$self" "$dir" > "$dir/rsh-agent"
  chmod +x "$dir/rsh-agent"
  # What mpirun needs to use them: the agent, TCP over the pair only, root allowed.
  cat > "$dir/mpi.env" << EOF
OMPI_MCA_plm_rsh_agent=$dir/rsh-agent
OMPI_MCA_btl=self,vader,tcp
OMPI_MCA_btl_tcp_if_include=$dev
OMPI_MCA_oob_tcp_if_include=$dev
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
EOF
  trap - ERR
  touch "$dir/ready"
  echo "two-hosts: hostA (${addr[hostA]}, CPU $(state cpu-hostA)) and hostB (${addr[hostB]}, CPU $(state cpu-hostB))" \
       "in namespaces mb-$tag-*; $dir/hostfile, $dir/rsh-agent"
}

# Runs "$@" inside host $1 (the rest of the words are one shell command when called as the
# agent, as ssh runs them).
do_run() {
  local how=$1 target=$2
  shift 2
  [ -f "$dir/ready" ] || { echo "two-hosts: not set up in $dir" >&2; exit 2; }
  local h=""
  for c in "${hosts[@]}"; do
    if [ "$target" = "$c" ] || [ "$target" = "${addr[$c]}" ]; then h=$c; fi
  done
  [ -n "$h" ] || { echo "two-hosts: no host $target (hostA, hostB, ${addr[hostA]}, ${addr[hostB]})" >&2; exit 2; }
  local cg
  cg=$(state "cgroup-$h")
  [ -z "$cg" ] || echo $$ > "$cg/tasks"
  local vars=()
  while IFS='=' read -r name value; do
    vars+=("${name#TWO_HOSTS_"${h}"_}=$value")
  done < <(env | grep "^TWO_HOSTS_${h}_" || true)
  local enter=(nsenter "--net=/run/netns/mb-$(state tag)-$h" "--uts=$dir/state/$h.uts" --
               taskset -c "$(state "cpu-$h")" env ${vars[@]+"${vars[@]}"})
  if [ "$how" = agent ]; then
    exec "${enter[@]}" /bin/sh -c "$*"
  else
    exec "${enter[@]}" "$@"
  fi
}

do_shape() {
  local rate=${1:-} delay=${2:-}
  [ -f "$dir/ready" ] || { echo "two-hosts: not set up in $dir" >&2; exit 2; }
  for h in "${hosts[@]}"; do
    local ns="mb-$(state tag)-$h"
    ip netns exec "$ns" tc qdisc del dev "$dev" root 2> /dev/null || true
    [ "$rate" = off ] && continue
    if ip netns exec "$ns" tc qdisc add dev "$dev" root netem rate "$rate" ${delay:+delay "$delay"} 2> /dev/null; then
      echo "two-hosts: $h: netem rate $rate${delay:+ delay $delay}"
    else
      [ -z "$delay" ] || { echo "two-hosts: this kernel has no netem (CONFIG_NET_SCH_NETEM): no delay" >&2; exit 3; }
      # Token bucket: the rate, bursts of one GSO packet (64 KiB), a queue of 20 ms at that rate.
      ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst 65536 latency 20ms
      echo "two-hosts: $h: tbf rate $rate (the kernel has no netem)"
    fi
  done
}

case "$cmd" in
  up) do_up ;;
  down) do_down ;;
  run) do_run run "${3:?host}" "${@:4}" ;;
  agent) do_run agent "${3:?host}" "${@:4}" ;;
  shape) do_shape "${@:3}" ;;
  *) echo "usage: $0 up|down|run|shape DIR ..." >&2; exit 2 ;;
esac
