#!/usr/bin/env python3
"""bench/synthetic_images.py remakes mirrorbench's synthetic images bit for bit: the same
digests as tests/test_idx_reader.cpp's synthetic_images_are_pinned, so PyTorch's side of
bench/model_bench.sh trains on the set mirrorbench does. Needs NumPy (skipped, exit 77,
without it: the benchmark's Python has it with PyTorch)."""
import os
import sys

try:
    import numpy  # noqa: F401
except ImportError:
    print("SKIP: no NumPy for", sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import synthetic_images as s  # noqa: E402

pixels, labels = s.make_images(7, 5, 3, 4, 9, s.TRAIN_SEED)
assert s.fnv1a(labels, pixels) == 2021891162517911781, s.fnv1a(labels, pixels)
pixels, labels = s.make_images(32, 32, 3, 10, 20, s.VAL_SEED)
assert s.fnv1a(labels, pixels) == 14688361112842884821, s.fnv1a(labels, pixels)
# Chunks and counts do not change the images: the first k of a larger set are the k.
p2, l2 = s.make_images(32, 32, 3, 10, 50, s.VAL_SEED, chunk=7)
assert (p2[:20] == pixels).all() and (l2[:20] == labels).all()
assert s.split_sizes(32, 32, 3) == (60000, 10000)
print("synthetic images: the NumPy remake matches mirrorbench's digests")
