"""The reference CNN and the IDX data loader in PyTorch, shared by bench/torch_cnn.py (CPU)
and bench/torch_gpu.py (GPU). Needs only torch (a pip-installed PyTorch need not bring numpy).
"""
import collections
import gzip
import json
import math
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


def model_summary(spec, cli=None):
    """`mirrorbench-cli model SPEC --json`: the model's layers with Keras's config names, its
    input shape and class count. The one reading of the text form is mirrorbench's own."""
    import subprocess
    cli = cli or os.environ.get("MIRRORBENCH_CLI") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin", "mirrorbench-cli")
    done = subprocess.run([cli, "model", spec, "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {done.stderr.strip()}")
    return json.loads(done.stdout)


class _Same2x2(nn.Module):
    """TF's 2x2 stride-2 pooling with same padding: odd sides round up and the last window
    takes what is there (the max of fewer values, the mean over the values inside)."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        if self.kind == "max":
            return F.max_pool2d(x, 2, ceil_mode=True)
        return F.avg_pool2d(x, 2, ceil_mode=True, count_include_pad=False)


def net_from_summary(summary):
    """The same network as torch.nn modules, named as mirrorbench's checkpoints name them
    (conv1, fc1, ...), Keras-default initialisation (Glorot-uniform kernels, zero biases)."""
    h, w, c = summary["input_shape"]
    layers, shape = [], [None, h, w, c]   # the output shape so far, Keras's (None, H, W, C)
    for layer in summary["layers"]:
        kind, cfg, name = layer["class"], layer["config"], layer["name"]
        if kind == "Conv2D":
            k = cfg["kernel_size"][0]
            layers.append((name, nn.Conv2d(shape[3], cfg["filters"], k, bias=cfg["use_bias"],
                                           padding=k // 2 if cfg["padding"] == "same" else 0)))
        elif kind in ("MaxPooling2D", "AveragePooling2D"):
            max_pool = kind == "MaxPooling2D"
            if cfg["padding"] == "same":
                layers.append((name, _Same2x2("max" if max_pool else "avg")))
            else:
                layers.append((name, nn.MaxPool2d(2) if max_pool else nn.AvgPool2d(2)))
        elif kind == "GlobalAveragePooling2D":
            layers.append((name, nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())))
        elif kind == "Flatten":
            layers.append((name, nn.Flatten()))
        elif kind == "Dropout":
            layers.append((name, nn.Dropout(cfg["rate"])))
        elif kind == "Dense":
            if len(shape) == 4:   # a Dense on an image flattens it in (C, H, W) order
                layers.append((name + "_flatten", nn.Flatten()))
            features = math.prod(shape[1:])
            layers.append((name, nn.Linear(features, cfg["units"], bias=cfg["use_bias"])))
        else:
            sys.exit(f"torch_model.py: no torch.nn layer for {kind}")
        if cfg.get("activation") == "relu":
            layers.append((name + "_relu", nn.ReLU()))
        shape = layer["output_shape"]
    net = nn.Sequential(collections.OrderedDict(layers))
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return net
