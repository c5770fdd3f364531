#!/usr/bin/env python3
"""Writes the image fixtures of test_image_data: small PNG and JPEG files made by Pillow, each
with the pixels Pillow decodes from it (what Keras's image loading sees), as raw bytes:
<file>.rgb (H x W x 3, convert("RGB")) and <file>.l (H x W, convert("L")), e.g. grey.png.rgb.

Deterministic; run with Debian's Python, which has Pillow: /usr/bin/python3 make_fixtures.py
"""
import pathlib

from PIL import Image

HERE = pathlib.Path(__file__).resolve().parent


def gradient(width, height):
    img = Image.new("RGB", (width, height))
    img.putdata([(x * 255 // (width - 1), y * 255 // (height - 1), (x * 37 + y * 91) % 256)
                 for y in range(height) for x in range(width)])
    return img


def save(img, name, **kw):
    path = HERE / name
    img.save(path, **kw)
    back = Image.open(path)
    (HERE / (name + ".rgb")).write_bytes(back.convert("RGB").tobytes())
    (HERE / (name + ".l")).write_bytes(back.convert("L").tobytes())


colour = gradient(12, 10)
save(colour, "colour.jpg", quality=85)                       # 4:2:0 chroma, Pillow's default
save(colour.convert("L"), "grey.jpg", quality=90)
save(colour, "colour_444.jpg", quality=95, subsampling=0)
save(colour.convert("P", palette=Image.ADAPTIVE, colors=16), "palette.png")
rgba = colour.copy()
rgba.putalpha(Image.linear_gradient("L").resize((12, 10)))  # alpha from 0 to 255: dropped, not blended
save(rgba, "rgba.png")
save(colour.convert("L"), "grey.png")
