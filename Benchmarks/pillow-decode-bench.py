#!/usr/bin/env python3
"""The peer for `kiroku bench --decode-only`: Pillow on the same photos, one thread, files read
into memory first. Prints one JSON object with ms per image for three recipes:
  reference: full decode, EXIF transpose, centre crop 224/256, bicubic resize to 224, (x - 127) / 128
  draft:     the same after Image.draft (DCT-scaled decode, libjpeg-turbo underneath) to the
             smallest scale whose shorter side covers the 256-pixel crop
  draft_2x:  draft to twice that (512), Kiroku's own choice

    python3 Benchmarks/pillow-decode-bench.py RUNS PHOTO...
"""
import io
import json
import sys
import time

import numpy as np
from PIL import Image, ImageOps

runs, paths = int(sys.argv[1]), sys.argv[2:]
files = [open(p, "rb").read() for p in paths]


def recipe(data, draft):
    image = Image.open(io.BytesIO(data))
    if draft:
        w, h = image.size
        factor = draft / min(w, h)
        image.draft("RGB", (max(1, int(w * factor + 0.5)), max(1, int(h * factor + 0.5))))
    image = ImageOps.exif_transpose(image).convert("RGB")
    side = int(224 / 256 * min(image.size))
    left, top = (image.width - side) // 2, (image.height - side) // 2
    image = image.crop((left, top, left + side, top + side)).resize((224, 224), Image.BICUBIC)
    return ((np.asarray(image, np.float32) - 127.0) / 128.0).transpose(2, 0, 1)


result = {"images": len(files), "decodes": runs}
for name, draft in (("reference", None), ("draft", 256), ("draft_2x", 512)):
    recipe(files[0], draft)
    times = []
    for i in range(runs):
        start = time.perf_counter()
        recipe(files[i % len(files)], draft)
        times.append((time.perf_counter() - start) * 1000)
    result[f"{name}_ms_per_image_mean"] = sum(times) / len(times)
print(json.dumps(result))
