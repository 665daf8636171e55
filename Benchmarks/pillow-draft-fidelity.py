#!/usr/bin/env python3
"""How close Pillow's DCT-scaled decode (Image.draft) stays to the reference recipe, at the
smallest scale covering the crop and at twice it: mean |tensor difference| and top-1 agreement
(ONNX Runtime) over the image set of `make test`. Prints one line per scale.

    python3 Benchmarks/pillow-draft-fidelity.py MODEL.onnx FIXTURES_DIR
"""
import json
import pathlib
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image, ImageOps

model, fixtures = sys.argv[1], pathlib.Path(sys.argv[2])
reference = json.loads((fixtures / "reference.json").read_text())
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
for target in (256, 512):
    differences, agreements = [], 0
    for path in sorted((fixtures / "photos").glob("*.jpg")):
        image = Image.open(path)
        factor = target / min(image.size)
        image.draft("RGB", (max(1, int(image.width * factor + 0.5)), max(1, int(image.height * factor + 0.5))))
        image = ImageOps.exif_transpose(image).convert("RGB")
        side = int(224 / 256 * min(image.size))
        left, top = (image.width - side) // 2, (image.height - side) // 2
        image = image.crop((left, top, left + side, top + side)).resize((224, 224), Image.BICUBIC)
        x = ((np.asarray(image, np.float32) - 127) / 128).transpose(2, 0, 1)[None]
        differences.append(float(np.abs(x - np.load(fixtures / "reference" / f"{path.stem}.npy")).mean()))
        agreements += int(session.run(None, {"input": x})[0].argmax() == reference[path.name]["top1"])
    print(f"Pillow draft to a shorter side of {target}: mean |tensor - reference| {np.mean(differences):.4f}, "
          f"top-1 agreement with the reference {agreements}/{len(differences)}")
