#!/usr/bin/python3
"""The reference CNN in PyTorch, for side-by-side timing with mirrorbench (bench/cpu_bench.sh).

Same model (conv32-pool-conv64-pool-dense64-dense10), same Keras-default Adam hyperparameters
(lr 1e-3, betas 0.9/0.999, eps 1e-7), same global batch, data resident in memory as float
tensors. Modes:
  --procs 1 --threads T      one process, T intra-op threads
  --procs P                  DistributedDataParallel over gloo, P processes x 1 thread, each
                             rank taking its contiguous share of every global batch
Prints one JSON line per epoch: {"mode", "epoch", "time_s", "val_acc", "train_loss"}.
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(data_dir, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    sys.exit(f"torch_cnn.py: {stem}[.gz] not found in {data_dir}")


def load(data_dir, limit):
    xs = read_idx(find(data_dir, "train-images-idx3-ubyte"))
    ys = read_idx(find(data_dir, "train-labels-idx1-ubyte"))
    vx = read_idx(find(data_dir, "t10k-images-idx3-ubyte"))
    vy = read_idx(find(data_dir, "t10k-labels-idx1-ubyte"))
    if limit:
        xs, ys = xs[:limit], ys[:limit]
    to_x = lambda a: torch.from_numpy(a.astype(np.float32) / 255.0).unsqueeze(1)
    to_y = lambda a: torch.from_numpy(a.astype(np.int64))
    return to_x(xs), to_y(ys), to_x(vx), to_y(vy)


class Net(nn.Module):
    # Names match mirrorbench's safetensors checkpoints (conv1, conv2, fc1, fc2).
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(1600, 64)
        self.fc2 = nn.Linear(64, 10)
        for m in (self.conv1, self.conv2, self.fc1, self.fc2):  # Keras defaults
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def evaluate(model, vx, vy):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(vx), 1000):
            correct += (model(vx[i:i + 1000]).argmax(1) == vy[i:i + 1000]).sum().item()
    model.train()
    return correct / len(vx)


def train(rank, procs, args, mode):
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads if procs == 1 else 1)
    if procs > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=procs)
    xs, ys, vx, vy = load(args.data, args.limit_train)
    model = Net()
    if procs > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    n, b = len(xs), args.batch
    gen = torch.Generator().manual_seed(args.seed)
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(n, generator=gen)
        if procs > 1:
            dist.barrier()
        t0 = time.perf_counter()
        loss_sum, seen = 0.0, 0
        for s in range(0, n, b):
            idx = order[s:s + b]
            lo, hi = len(idx) * rank // procs, len(idx) * (rank + 1) // procs
            mine = idx[lo:hi]
            out = model(xs[mine])
            # Sum over my samples / global batch, gradients summed by DDP's all-reduce:
            # DDP averages over ranks, so multiply by procs to get MirroredStrategy's sum.
            loss = F.cross_entropy(out, ys[mine], reduction="sum") / len(idx) * procs
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(idx) / procs  # rank 0's own samples
            seen += len(mine)
        if procs > 1:
            dist.barrier()
        elapsed = time.perf_counter() - t0
        if rank == 0:
            net = model.module if procs > 1 else model
            print(json.dumps({"mode": mode, "epoch": epoch, "time_s": elapsed, "val_acc": evaluate(net, vx, vy),
                              "train_loss": loss_sum / seen}), flush=True)
    if procs > 1:
        dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--port", type=int, default=29517)
    args = ap.parse_args()
    mode = f"torch {args.procs}proc x {args.threads if args.procs == 1 else 1}thr" + (" DDP" if args.procs > 1 else "")
    if args.procs == 1:
        train(0, 1, args, mode)
    else:
        mp.spawn(train, args=(args.procs, args, mode), nprocs=args.procs, join=True)


if __name__ == "__main__":
    main()
