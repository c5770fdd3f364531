#!/usr/bin/python3
# Writes the NumPy fixtures of test_numpy_data with NumPy itself (Debian's python3-numpy), so
# the reader is held to real np.savez output, not only to files the test crafts by hand.
# Run from this folder: ./make_fixtures.py (the files are committed; a few hundred bytes).
import numpy as np

# Colour images N x H x W x C (4 x 3 pixels, 3 channels); value = 100*image + 10*row + col + channel*50 % 256.
def images(n, offset):
    x = np.zeros((n, 4, 3, 3), dtype=np.uint8)
    for i in range(n):
        for r in range(4):
            for c in range(3):
                for ch in range(3):
                    x[i, r, c, ch] = (100 * (i + offset) + 10 * r + c + 50 * ch) % 256
    return x

np.savez_compressed("tiny_rgb.npz", x_train=images(5, 0), y_train=np.array([0, 1, 2, 1, 0], dtype=np.int64),
                    x_test=images(2, 5), y_test=np.array([[2], [1]], dtype=np.uint8))
# Grey images N x H x W, big-endian int16 labels, uncompressed (np.savez): Keras's mnist.npz layout.
np.savez("tiny_grey.npz", x_train=np.arange(3 * 2 * 2, dtype=np.uint8).reshape(3, 2, 2),
         y_train=np.array([3, 0, 1], dtype=">i2"), x_test=np.full((1, 2, 2), 255, dtype=np.uint8),
         y_test=np.array([2], dtype=np.int32))
