#!/usr/bin/env python3
"""Builds the image test set and its references (never committed; `make test` runs it).

    python3 scripts/make-vision-fixtures.py MODEL.onnx PHOTOS_DIR OUT_DIR

OUT_DIR/photos/: the real photographs in PHOTOS_DIR (scripts/fetch-photos.sh) re-saved, some of
them progressive, and some large (upscaled past 4 MP), as phones send them.
OUT_DIR/reference.json: for each photo, the reference recipe's tensor statistics and
ONNX Runtime's top-1 on it. The reference recipe (the default model's training preprocessing):
Pillow full decode, EXIF transpose, centre crop of 224/256 of the shorter side, bicubic resize to
224x224, (x - 127) / 128, RGB, NCHW. Each tensor is saved as OUT_DIR/reference/NAME.npy.
OUT_DIR/cases/: edge cases: 1x1, every EXIF orientation, grayscale, CMYK, progressive, restart
markers, truncated at several points, random bytes, a PNG, an empty file, a header declaring
60000x60000 pixels. OUT_DIR/cases/upright/: the upright pixels Pillow decodes for each orientation.
"""
import io
import json
import pathlib
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image, ImageOps

model_path, photos_dir, out = map(pathlib.Path, sys.argv[1:4])
rng = np.random.default_rng(4)
(out / "photos").mkdir(parents=True, exist_ok=True)
(out / "reference").mkdir(exist_ok=True)
(out / "cases" / "upright").mkdir(parents=True, exist_ok=True)

# Real photographs (scripts/fetch-photos.sh), re-saved: some upscaled past 4 MP, some progressive.
sources = {p.stem: p.read_bytes() for p in sorted(photos_dir.glob("*.jpg"))}
for index, (stem, data) in enumerate(sorted(sources.items())):
    image = Image.open(io.BytesIO(data)).convert("RGB")
    if index % 4 == 0:  # some phone-sized photos, above 4 MP
        image = image.resize((image.width * 4, image.height * 4), Image.BICUBIC)
    image.save(out / "photos" / f"{stem}.jpg", "JPEG", quality=90, progressive=index % 3 == 0)

session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])


def reference_tensor(path):
    image = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
    side = int(224 / 256 * min(image.size))
    left, top = (image.width - side) // 2, (image.height - side) // 2
    image = image.crop((left, top, left + side, top + side)).resize((224, 224), Image.BICUBIC)
    return ((np.asarray(image, np.float32) - 127.0) / 128.0).transpose(2, 0, 1)[None].copy()


reference = {}
for path in sorted((out / "photos").glob("*.jpg")):
    tensor = reference_tensor(path)
    np.save(out / "reference" / f"{path.stem}.npy", tensor)
    logits = session.run(None, {"input": tensor})[0][0]
    reference[path.name] = {"top1": int(logits.argmax()), "pixels": Image.open(path).size}
(out / "reference.json").write_text(json.dumps(reference, indent=1))

# Edge cases.
cases = out / "cases"
base = Image.open(io.BytesIO(sources["chelsea"])).convert("RGB").resize((64, 48))
Image.new("RGB", (1, 1), (200, 10, 10)).save(cases / "tiny_1x1.jpg", quality=95)
base.convert("L").save(cases / "grayscale.jpg", quality=95)
base.convert("CMYK").save(cases / "cmyk.jpg", quality=95)
base.save(cases / "progressive.jpg", quality=95, progressive=True)
base.save(cases / "baseline.jpg", quality=95)
# Every orientation: store the pixels so that applying the tag gives the upright image back.
inverse = {2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM, 5: Image.TRANSPOSE,
           6: Image.ROTATE_90, 7: Image.TRANSVERSE, 8: Image.ROTATE_270}
for orientation in range(1, 9):
    stored = base if orientation == 1 else base.transpose(inverse[orientation])
    exif = Image.Exif()
    exif[0x0112] = orientation
    path = cases / f"orientation_{orientation}.jpg"
    stored.save(path, quality=95, exif=exif.tobytes())
    np.save(cases / "upright" / f"orientation_{orientation}.npy", np.asarray(ImageOps.exif_transpose(Image.open(path)).convert("RGB")))
base.save(cases / "restart_markers.jpg", quality=95, restart_marker_rows=1)
whole = (cases / "baseline.jpg").read_bytes()
for fraction in (0.1, 0.5, 0.9):
    (cases / f"truncated_{int(fraction * 100)}.jpg").write_bytes(whole[: int(len(whole) * fraction)])
(cases / "random_bytes.jpg").write_bytes(bytes(rng.integers(0, 256, 4096, dtype=np.uint8)))
(cases / "empty.jpg").write_bytes(b"")
buffer = io.BytesIO()
base.save(buffer, "PNG")
(cases / "image.png").write_bytes(buffer.getvalue())
# A decompression bomb: a valid small JPEG whose frame header claims 60000x60000 pixels.
bomb = bytearray(whole)
sof = next(i for i in range(len(bomb) - 1) if bomb[i] == 0xFF and bomb[i + 1] in (0xC0, 0xC2))
bomb[sof + 5:sof + 9] = (60000).to_bytes(2, "big") * 2
(cases / "huge_header.jpg").write_bytes(bytes(bomb))
print(f"make-vision-fixtures: {len(reference)} photos, {len(list(cases.glob('*.*')))} edge cases in {out}")
