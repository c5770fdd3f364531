#!/usr/bin/env python3
"""Writes Fashion-MNIST (Debian's IDX files) as a folder of PNGs in Keras's layout
(OUT/png/train/<class>/NNNNN.png, OUT/png/test/...) and as the same images in OUT/same.npz,
then times Pillow decoding every training PNG (open, load, as a NumPy array), one thread, as
Keras's image loading does per file. Used by bench/image_folder_bench.sh.

usage: image_folder_export.py IDX_DIR OUT
"""
import gzip
import pathlib
import sys
import time

import numpy as np
from PIL import Image


def idx(path, header):
    with gzip.open(path) as f:
        return np.frombuffer(f.read()[header:], dtype=np.uint8)


src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
splits = {}
for split, prefix in (("train", "train"), ("test", "t10k")):
    x = idx(src / f"{prefix}-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    y = idx(src / f"{prefix}-labels-idx1-ubyte.gz", 8)
    splits[split] = (x, y)
    for c in range(10):
        (out / "png" / split / f"class{c}").mkdir(parents=True, exist_ok=True)
    for i, (img, label) in enumerate(zip(x, y)):
        Image.fromarray(img).save(out / "png" / split / f"class{label}" / f"{i:05}.png")
np.savez(out / "same.npz", x_train=splits["train"][0], y_train=splits["train"][1], x_test=splits["test"][0],
         y_test=splits["test"][1])

files = sorted((out / "png" / "train").glob("*/*.png"))
start = time.perf_counter()
for f in files:
    with Image.open(f) as im:
        np.asarray(im)
seconds = time.perf_counter() - start
print(f"Pillow {Image.__version__}: {len(files)} training PNGs decoded in {seconds:.2f} s "
      f"({len(files) / seconds:.0f} images/s, one thread)")
