"""mirrorbench's synthetic images (core/data/synthetic.cpp) remade bit for bit in NumPy, so that
PyTorch trains on the very set mirrorbench does (bench/torch_cnn.py --synthetic): the class
templates, the noise, the one-in-ten random labels. The values matter for speed, not only for
accuracy: a set a model learns to a loss of zero drives its gradients into subnormal floats,
which x86 computes many times slower.

SplitMix64 is a counter: draw k (from 1) of seed s is mix(s + k * golden), so a whole chunk of
images is a vector of counters. Only exactly rounded operations, in the C++ order, so every
pixel and label equals mirrorbench's (tests/test_synthetic_images.py and the C++ test pin the
same digest).
"""
import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
RELABELLED = 0.1                      # kSyntheticRelabelled
TRAIN_SEED, VAL_SEED = 0x7261696E, 0x76616C00   # make_synthetic_split's seeds
TRAIN_IMAGES, VAL_IMAGES, MAX_BYTES = 60000, 10000, 512 << 20


def _mix(z):
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _draws(seed, first, count):
    """Draws first+1 .. first+count of SplitMix64(seed), as uint64."""
    with np.errstate(over="ignore"):
        k = np.arange(first + 1, first + count + 1, dtype=np.uint64)
        return _mix(np.uint64(seed % (1 << 64)) + k * GOLDEN)


def _unit(z):
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def class_template(h, w, c, label):
    seed = (0x5EED * 977 + label * 0x9E3779B97F4A7C15) % (1 << 64)
    u = _unit(_draws(seed, 0, 3 * c)).reshape(c, 3)
    y = np.arange(h, dtype=np.float64)[:, None]
    x = np.arange(w, dtype=np.float64)[None, :]
    planes = []
    for fy_u, fx_u, phase in u:
        fy, fx = 0.5 + 3.0 * fy_u, 0.5 + 3.0 * fx_u
        t = fy * y / h + fx * x / w + phase
        v = 4.0 * np.abs(t - np.floor(t) - 0.5) - 1.0
        planes.append((0.5 + 0.5 * v).astype(np.float32))
    return np.stack(planes).reshape(-1)


def make_images(h, w, c, classes, count, seed, chunk=2048):
    """(pixels uint8 [count, c, h, w], labels uint8 [count]) as make_synthetic_images gives them."""
    per = h * w * c
    templates = np.stack([class_template(h, w, c, k) for k in range(classes)]).astype(np.float64)
    pixels = np.empty((count, per), dtype=np.uint8)
    labels = np.empty(count, dtype=np.uint8)
    for begin in range(0, count, chunk):
        n = min(chunk, count - begin)
        z = _draws(seed, begin * (3 + per), n * (3 + per)).reshape(n, 3 + per)
        label = (z[:, 0] % np.uint64(classes)).astype(np.int64)
        relabelled = _unit(z[:, 1]) < RELABELLED
        drawn = (z[:, 2] % np.uint64(classes)).astype(np.int64)
        labels[begin:begin + n] = np.where(relabelled, drawn, label)
        v = 72.0 * templates[label] + 183.0 * _unit(z[:, 3:])
        pixels[begin:begin + n] = np.clip(v, 0.0, 255.0).astype(np.uint8)
    return pixels.reshape(count, c, h, w), labels


def split_sizes(h, w, c):
    """make_synthetic_split's sizes: 60,000 / 10,000, fewer past 512 MB."""
    per = h * w * c
    train = max(1, min(TRAIN_IMAGES, MAX_BYTES * 6 // 7 // per))
    return train, max(1, min(VAL_IMAGES, train // 6))


def fnv1a(*arrays):
    """FNV-1a 64 over the arrays' bytes, in order (the tests' digest)."""
    h = 0xCBF29CE484222325
    for a in arrays:
        for b in np.ascontiguousarray(a).tobytes():
            h = ((h ^ b) * 0x100000001B3) % (1 << 64)
    return h
