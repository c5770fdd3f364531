# Sourced by the test fixtures that make network namespaces (two-hosts.sh, one-node-slurm.sh).
# `ip netns add` turns /run/netns into a bind mount of itself the first time and never undoes
# it; in a chroot (fresh-debian-check) that mount outlives the fixture and keeps the root from
# being removed. A fixture notes whether it made the mount and, going down, unmounts it again
# once no namespace is left in it: the machine is left as the fixture found it.

# Before the first `ip netns add`: note (in state directory $1) that the mount is ours to undo.
netns_note_mount() {
  mountpoint -q /run/netns 2>/dev/null || touch "$1/made-run-netns"
}

# Going down, after `ip netns del`: undo the mount if we made it and nobody else uses it.
netns_release_mount() {
  [ -f "$1/made-run-netns" ] || return 0
  rm -f "$1/made-run-netns"
  [ -d /run/netns ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ] || return 0
  for _ in 1 2 3; do
    mountpoint -q /run/netns 2>/dev/null || break
    umount /run/netns 2>/dev/null || umount -l /run/netns 2>/dev/null || break
  done
}
