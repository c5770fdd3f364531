#!/usr/bin/python3
# Usage: bench/summarize_breakdown.py RUN.json... (records of mirrorbench-cli train --json)
# Summarises mirrorbench run records: epoch time (median over epochs after the first), and the
# breakdown's shares (compute, exchange, waiting) averaged over replicas.
import json, sys, statistics
for path in sys.argv[1:]:
    r = json.load(open(path))
    c = r["config"]
    eps = r["epochs"]
    use = eps[1:] if len(eps) > 1 else eps
    t = statistics.median(e["time_s"] for e in use)
    shares = []
    for e in use:
        for p in e["replica_times"]:
            tot = p["forward_s"] + p["backward_s"] + p["allreduce_s"] + p["optimizer_s"] + p["wait_s"]
            shares.append((p["allreduce_s"] / tot, p["wait_s"] / tot))
    ex = statistics.mean(s[0] for s in shares) if shares else 0
    wt = statistics.mean(s[1] for s in shares) if shares else 0
    print(f"{path}: {c['model']} {c['devices']} link {c.get('link_gbit',0)} Gbit/s comm={c['communicator']} "
          f"epoch {t:.2f} s  exchange {100*ex:.1f}%  wait {100*wt:.1f}%  val_acc {eps[-1]['val_acc']:.4f}")
