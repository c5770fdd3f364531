#!/usr/bin/env python3
"""Writes the hand-made seed inputs of the fuzz corpora (tests/fuzz/<target>/seed-*).

Input formats are those of fuzz_entry.h. Files the fuzzers found are kept beside these
under other names (crash-*, regress-*) and are not touched here. Deterministic: gzip
streams carry mtime 0. Run from anywhere: python3 tests/fuzz/make_seeds.py
"""
import gzip
import json
import pathlib
import struct
import zlib

HERE = pathlib.Path(__file__).resolve().parent


def write(target, name, data):
    d = HERE / target
    d.mkdir(exist_ok=True)
    (d / ("seed-" + name)).write_bytes(data)


def gz(b):
    return gzip.compress(b, compresslevel=9, mtime=0)


# ---- IDX: [u16 LE n][n bytes images][labels] ----
def images(count, pixels, magic=0x803, rows=28, cols=28):
    return struct.pack(">IIII", magic, count, rows, cols) + pixels


def labels(count, values, magic=0x801):
    return struct.pack(">II", magic, count) + bytes(values)


def idx_input(img, lab):
    return struct.pack("<H", len(img)) + img + lab


pattern = bytes((i * 7 + i // 28) & 0xFF for i in range(784))
img1, lab1 = images(1, pattern), labels(1, [3])
write("idx", "valid-raw-pair", idx_input(img1, lab1))
write("idx", "valid-gz-pair", idx_input(gz(img1), gz(lab1)))
write("idx", "valid-gz-two-members", idx_input(gz(img1[:300]) + gz(img1[300:]), gz(lab1)))
write("idx", "truncated-gz", idx_input(gz(img1)[:40], lab1))
write("idx", "count-over-the-cap", idx_input(images(0x7FFFFFFF, b""), labels(0x7FFFFFFF, [])))
write("idx", "label-out-of-range", idx_input(img1, labels(1, [10])))
write("idx", "count-mismatch", idx_input(img1, labels(2, [1, 2])))

# ---- safetensors: [mode byte][file]; odd mode appends zero data for every tensor ----
TENSORS = [("conv1.weight", [32, 1, 3, 3]), ("conv1.bias", [32]), ("conv2.weight", [64, 32, 3, 3]),
           ("conv2.bias", [64]), ("fc1.weight", [64, 1600]), ("fc1.bias", [64]), ("fc2.weight", [10, 64]),
           ("fc2.bias", [10])]


def header(metadata=None, override=None):
    h, offset = {}, 0
    for name, shape in TENSORS:
        n = 4
        for s in shape:
            n *= s
        h[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    if metadata:
        h["__metadata__"] = metadata
    if override:
        override(h)
    return h


def file_of(h_text):
    h_text += " " * ((8 - len(h_text) % 8) % 8)
    return struct.pack("<Q", len(h_text)) + h_text.encode()


def text(h):
    return json.dumps(h, separators=(",", ":"))


write("checkpoint", "valid-header-padded", b"\x01" + file_of(text(header({"run_id": "20261130T063221Z-cpu2-1a2b"}))))
write("checkpoint", "header-without-data", b"\x00" + file_of(text(header())))
write("checkpoint", "f16-dtype", b"\x01" + file_of(text(header(override=lambda h: h["fc1.weight"].update(dtype="F16")))))
write("checkpoint", "offsets-reversed",
      b"\x01" + file_of(text(header(override=lambda h: h["fc1.bias"].update(data_offsets=[256, 0])))))
write("checkpoint", "header-not-json", b"\x01" + file_of('{"conv1.weight": {"dtype": "F32",'))
nested = "[" * 300 + "]" * 300
write("checkpoint", "nested-shape",
      b"\x01" + file_of(text(header()).replace('"shape":[32,1,3,3]', '"shape":' + nested, 1)))

# ---- run records: the JSON text ----
record = {
    "format_version": 1, "id": "20261130T063221Z-cpu2-1a2b", "name": "seed",
    "config": {"model": "cnn-reference", "devices": "cpu:2", "replicas": 2, "simulated": False,
               "global_batch": 128, "per_replica_batch": 64, "per_replica_batch_mode": False, "epochs": 1,
               "base_learning_rate": 0.001, "learning_rate": 0.001, "scale_lr": False,
               "seed": 18446744073709551610, "dataset": "fashion-mnist",
               "data_dir": "/usr/share/datasets/fashion-mnist", "train_size": 60000, "val_size": 10000,
               "backend": "onednn", "communicator": "threads", "version": "0.1.0", "cpu_model": "cpu",
               "gpu_models": [], "start_time": "2026-11-30T06:32:21Z"},
    "epochs": [{"epoch": 1, "time_s": 9.5, "allreduce_s": 0.25, "train_loss": 0.51, "train_acc": 0.81,
                "val_loss": 0.42, "val_acc": 0.85, "images_per_s": 6315.8}],
    "replicas_in_sync": True, "status": "completed", "error": ""}
write("run_record", "valid", text(record).encode())
failed = json.loads(text(record))
failed.update(status="failed", error="diverged", replicas_in_sync=False)
failed["epochs"][0]["train_loss"] = None
failed["config"]["gpu_models"] = ["NVIDIA H200"]
write("run_record", "valid-failed-nan-loss", text(failed).encode())
broken = json.loads(text(record))
del broken["config"]["global_batch"]
write("run_record", "missing-field", text(broken).encode())
broken = json.loads(text(record))
broken["config"]["replicas"] = 2.5
write("run_record", "float-replicas", text(broken).encode())
write("run_record", "not-json", text(record).encode()[:120])

# ---- model text: the --model text, a preset name or layers ----
for preset in ["reference", "mlp", "lenet5", "cnn-cifar", "dense:4096"]:
    write("model_text", "valid-preset-" + preset.replace(":", "-"), preset.encode())
write("model_text", "valid-old-record-name", b"cnn-dense256")
write("model_text", "valid-same-padding-avgpool", b"conv16@5s-avgpool@s-conv32@7s-pool@s-avgpool-dense64-dense10")
write("model_text", "valid-gap-dropout-flags",
      b"32x32x3:conv32@3s_nobias-conv32-pool-drop12.5-conv64_linear-gap-dense128_linear-drop0.25-dense10_nobias")
write("model_text", "valid-flatten-1x1-kernel", b"64x48x3:conv8@1-pool@s-flatten-dense32_linear_nobias-dense2")
write("model_text", "valid-drop-below-1e-4", b"dense64-drop0.0000001-dense10")   # no exponent: its '-' splits
write("model_text", "even-kernel", b"conv32@4-pool-dense10")
write("model_text", "pool-of-1x1", b"1x1x1:pool-dense10")
write("model_text", "conv-after-dense", b"dense64-conv32-dense10")
write("model_text", "zero-units", b"conv32-pool-dense0-dense10")
write("model_text", "missing-last-dense", b"conv32-pool-conv64-pool")
write("model_text", "relu-flag-on-pool", b"conv32-pool_linear-dense10")
write("model_text", "garbage-bytes", bytes((i * 151 + 7) & 0xFF for i in range(200)))
write("model_text", "very-long", b"conv8@3s-" * 300 + b"dense10")
write("model_text", "filters-over-int", b"conv99999999999999999999-dense10")
write("model_text", "units-wrap-to-ten", b"conv32-pool-dense4294967306")
write("model_text", "input-100000-square", b"100000x100000x3:conv32-dense10")
write("model_text", "dense-preset-over-int", b"dense:4294967360")
write("model_text", "flatten-over-int", b"1024x1024x64:conv4096@3s-flatten-dense10")   # 2^32 values

# ---- data source: the --data value's synthetic form ----
write("data_source", "valid-cifar-shape", b"synthetic:32x32x3")
write("data_source", "valid-classes", b"synthetic:28x28x1:7")
write("data_source", "valid-largest", b"synthetic:1024x1024x64:256")
write("data_source", "two-sides", b"synthetic:28x28")
write("data_source", "zero-side", b"synthetic:0x28x1")
write("data_source", "one-class", b"synthetic:28x28x1:1")
write("data_source", "too-many-classes", b"synthetic:28x28x1:257")
write("data_source", "side-over-int", b"synthetic:99999999999x1x1")
write("data_source", "side-too-large", b"synthetic:2048x2x1")
write("data_source", "a-folder", b"/usr/share/datasets/fashion-mnist")
write("data_source", "extra-field", b"synthetic:28x28x1:10:3")
write("data_source", "plus-sign", b"synthetic:+28x28x1")

# ---- Keras model files: JSON (to_json, Keras 3 config.json, TF.js), or a .keras zip ----
import io
import zipfile


def keras_layer(cls, **config):
    return {"class_name": cls, "config": dict(name=cls.lower(), trainable=True, dtype="float32", **config)}


def keras_sequential(layers, **extra):
    return dict({"class_name": "Sequential", "config": {"name": "sequential", "layers": layers}}, **extra)


REF_LAYERS = [
    keras_layer("Conv2D", filters=32, kernel_size=[3, 3], strides=[1, 1], padding="valid", activation="relu",
                use_bias=True, batch_input_shape=[None, 28, 28, 1]),
    keras_layer("MaxPooling2D", pool_size=[2, 2], strides=[2, 2], padding="valid"),
    keras_layer("Conv2D", filters=64, kernel_size=[3, 3], padding="valid", activation="relu"),
    keras_layer("MaxPooling2D", pool_size=[2, 2]),
    keras_layer("Flatten"),
    keras_layer("Dense", units=64, activation="relu"),
    keras_layer("Dense", units=10, activation="softmax"),
]
ref = keras_sequential(REF_LAYERS, keras_version="2.13.1", backend="tensorflow")
write("keras", "valid-keras2-reference", json.dumps(ref).encode())
write("keras", "valid-keras22-bare-list", json.dumps({"class_name": "Sequential", "config": REF_LAYERS}).encode())
write("keras", "valid-tfjs", json.dumps({"format": "layers-model", "modelTopology": {"model_config": ref}}).encode())
k3 = keras_sequential([{"module": "keras.layers", "class_name": "InputLayer", "registered_name": None,
                        "config": {"batch_shape": [None, 32, 32, 3], "dtype": "float32", "name": "input_layer"}},
                       keras_layer("Conv2D", filters=8, kernel_size=[3, 3], padding="same",
                                   activation={"module": "keras.activations", "class_name": "function",
                                               "config": "relu", "registered_name": "function"}),
                       keras_layer("GlobalAveragePooling2D"), keras_layer("Dense", units=10, activation="softmax")],
                      module="keras")
write("keras", "valid-keras3-config", json.dumps(k3).encode())
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in [("metadata.json", b'{"keras_version": "3.3.3"}'), ("config.json", json.dumps(k3).encode()),
                       ("model.weights.h5", b"\x89HDF\r\n\x1a\n")]:
        z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
write("keras", "valid-keras3-archive", buf.getvalue())
lam = json.loads(json.dumps(ref))
lam["config"]["layers"].insert(2, keras_layer("Lambda", function=["4wEAAAAAAAAAAAAAAAEAAAAC", None, None],
                                              function_type="lambda"))
write("keras", "lambda", json.dumps(lam).encode())
branch = {"class_name": "Functional", "config": {"name": "model", "layers": [
    {"class_name": "InputLayer", "name": "in", "inbound_nodes": [],
     "config": {"name": "in", "batch_input_shape": [None, 28, 28, 1]}},
    dict(keras_layer("Conv2D", filters=4, kernel_size=3), name="a", inbound_nodes=[[["in", 0, 0, {}]]]),
    dict(keras_layer("Conv2D", filters=4, kernel_size=3), name="b", inbound_nodes=[[["in", 0, 0, {}]]]),
    dict(keras_layer("Add"), name="add", inbound_nodes=[[["a", 0, 0, {}], ["b", 0, 0, {}]]])]}}
write("keras", "functional-branches", json.dumps(branch).encode())
write("keras", "deep-nesting", b"[" * 5000 + b"]" * 5000)
write("keras", "no-input-shape", json.dumps(keras_sequential(REF_LAYERS[1:])).encode())

# ---- zip archives ----
def zip_of(entries, method=zipfile.ZIP_DEFLATED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, method)
    return buf.getvalue()


write("zip", "valid-two-entries", zip_of([("a.txt", b"hello"), ("dir/b.bin", bytes(range(256)))]))
write("zip", "valid-stored", zip_of([("s", b"stored bytes")], zipfile.ZIP_STORED))
write("zip", "bomb-2mb-of-zeros", zip_of([("config.json", b"\0" * (2 << 20))]))
write("zip", "truncated", zip_of([("a.txt", b"hello" * 100)])[:-30])
lying = bytearray(zip_of([("a.txt", b"x" * 1000)]))
at = lying.rfind(b"PK\x01\x02")
lying[at + 24:at + 28] = struct.pack("<I", 10)   # the central directory's uncompressed size: 10
write("zip", "size-lie", bytes(lying))
write("zip", "not-a-zip", b"PK\x03\x04" + b"\0" * 60)

# The hand-written Keras fixtures of every format (tests/data/keras/), accepted or refused.
for fixture in sorted((HERE.parent / "data" / "keras").glob("*.json")):
    write("keras", "fixture-" + fixture.stem.replace("_", "-"), fixture.read_bytes())

# ---- NumPy: an .npz archive (starting "PK") or one .npy file ----
def npy(descr, shape, data, version=1, order="False"):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, order, shape)
    lb = 2 if version == 1 else 4
    d += " " * ((64 - (8 + lb + len(d) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY" + bytes([version, 0]) + len(d).to_bytes(lb, "little") + d.encode() + data


write("numpy", "grey-u1", npy("|u1", "(2, 2, 2)", bytes(range(8))))
write("numpy", "rgb-i4-v2", npy("<i4", "(1, 2, 1, 3)", b"".join(struct.pack("<i", v) for v in (0, 9, 255, 1, 2, 3)), 2))
write("numpy", "float-refused", npy("<f4", "(1, 1, 1)", b"\0" * 4))
write("numpy", "truncated", npy("|u1", "(2, 2, 2)", bytes(7)))
write("numpy", "fortran", npy("|u1", "(1, 1, 1)", b"x", order="True"))
write("numpy", "npz-stored", zip_of([("x_train.npy", npy("|u1", "(2, 1, 1)", b"\1\2")),
                                     ("y_train.npy", npy("<i8", "(2,)", struct.pack("<qq", 0, 1))),
                                     ("x_test.npy", npy("|u1", "(1, 1, 1)", b"\3")),
                                     ("y_test.npy", npy("|u1", "(1,)", b"\1"))], zipfile.ZIP_STORED))
write("numpy", "npz-missing-y-test", zip_of([("x_train.npy", npy("|u1", "(1, 1, 1)", b"\1"))]))
for fixture in sorted((HERE.parent / "data" / "numpy").glob("*.npz")):
    write("numpy", "fixture-" + fixture.stem.replace("_", "-"), fixture.read_bytes())

# ---- CIFAR-10: one binary batch (records of a label byte and 3,072 pixels) ----
write("cifar", "two-records", bytes([3]) + bytes(range(256)) * 12 + bytes([9]) + bytes(3072))
write("cifar", "label-10", bytes([10]) + bytes(3072))
write("cifar", "short", bytes([1]) + bytes(100))


# ---- PNG and JPEG: one image file ----
# PNGs by hand (zlib and CRCs), so that headers can lie; JPEGs by Pillow (Debian's python3-pil,
# /usr/bin/python3), their size fields then edited.
def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width, height, colour_type, rows, bit_depth=8, ihdr_size=None):
    w, h = ihdr_size or (width, height)
    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, colour_type, 0, 0, 0)
    raw = b"".join(b"\0" + r for r in rows)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(raw, 9)) + \
        png_chunk(b"IEND", b"")


write("image", "png-grey-2x2", png(2, 2, 0, [b"\x00\xff", b"\x80\x40"]))
write("image", "png-rgb-2x1", png(2, 1, 2, [b"\xff\x00\x00\x00\x00\xff"]))
write("image", "png-rgba-1x1", png(1, 1, 6, [b"\x10\x20\x30\x00"]))
write("image", "png-grey16-1x1", png(1, 1, 0, [b"\x12\x34"], bit_depth=16))
write("image", "png-truncated", png(2, 2, 0, [b"\x00\xff", b"\x80\x40"])[:-20])
write("image", "png-bomb-header", png(1, 1, 0, [b"\x00"], ihdr_size=(100000, 100000)))
write("image", "png-too-little-data", png(4, 4, 0, [b"\x00\x00\x00\x00"]))

try:
    import io
    from PIL import Image

    def jpeg(mode, size, colour, **kw):
        out = io.BytesIO()
        Image.new(mode, size, colour).save(out, "JPEG", quality=90, **kw)
        return out.getvalue()

    write("image", "jpeg-grey-8x8", jpeg("L", (8, 8), 77))
    write("image", "jpeg-rgb-16x8", jpeg("RGB", (16, 8), (200, 30, 90)))
    write("image", "jpeg-progressive", jpeg("RGB", (8, 8), (1, 2, 3), progressive=True))
    full = jpeg("RGB", (8, 8), (10, 20, 30))
    write("image", "jpeg-truncated", full[: len(full) // 2])
    sof = full.index(b"\xff\xc0")   # baseline frame header: FF C0 len(2) precision(1) height(2) width(2)
    write("image", "jpeg-bomb-header", full[: sof + 5] + struct.pack(">HH", 65000, 65000) + full[sof + 9:])
except ImportError:
    print("Pillow missing: the JPEG seeds were not rewritten (run with /usr/bin/python3)")
