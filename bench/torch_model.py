"""The reference CNN and the IDX data loader in PyTorch, shared by bench/torch_cnn.py (CPU)
and bench/torch_gpu.py (GPU). Needs only torch (a pip-installed PyTorch need not bring numpy).
"""
import gzip
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def find(data_dir, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    sys.exit(f"{os.path.basename(sys.argv[0])}: {stem}[.gz] not found in {data_dir}")


def load(data_dir, limit):
    """Train and validation tensors: images float32 [N,1,28,28] in [0,1] (x / 255, as
    mirrorbench normalises), labels int64."""
    xs = read_idx(find(data_dir, "train-images-idx3-ubyte"))
    ys = read_idx(find(data_dir, "train-labels-idx1-ubyte"))
    vx = read_idx(find(data_dir, "t10k-images-idx3-ubyte"))
    vy = read_idx(find(data_dir, "t10k-labels-idx1-ubyte"))
    if limit:
        xs, ys = xs[:limit], ys[:limit]
    to_x = lambda a: (a.to(torch.float32) / 255.0).unsqueeze(1)
    to_y = lambda a: a.to(torch.int64)
    return to_x(xs), to_y(ys), to_x(vx), to_y(vy)


class Net(nn.Module):
    """conv32-pool-conv64-pool-dense64-dense10 with Keras-default initialisation. The names
    match mirrorbench's safetensors checkpoints (conv1, conv2, fc1, fc2)."""

    def __init__(self, hidden=64):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(1600, hidden)   # hidden: the dense width (64: the reference CNN)
        self.fc2 = nn.Linear(hidden, 10)
        for m in (self.conv1, self.conv2, self.fc1, self.fc2):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)
