# Sourced by the CPU benchmarks (after `cd` to the repository root): the CLI under test
# ($MIRRORBENCH_CLI, else this checkout's build) and a scratch folder $out, removed on exit.
cli=${MIRRORBENCH_CLI:-build/bin/mirrorbench-cli}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
