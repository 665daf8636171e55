#!/usr/bin/env bash
# Fetches real photographs that PyPI packages ship (never committed) into a directory:
#   scripts/fetch-photos.sh [DIR]      (default: .kiroku/photos)
# Sources: scikit-learn's sample images (china.jpg, flower.jpg) and scikit-image's data set: its
# JPEGs (rocket, retina, hubble_deep_field) and its colour photographs stored as PNG (coffee,
# chelsea the cat, astronaut, motorcycles, ...), saved as JPEG with Pillow. Wheels are cached in
# .kiroku/cache.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.kiroku/photos}
cache=.kiroku/cache/wheels
mkdir -p "$out" "$cache"
if [ -z "$(ls "$cache"/scikit_learn-*.whl 2>/dev/null)" ] || [ -z "$(ls "$cache"/scikit_image-*.whl 2>/dev/null)" ]; then
    python3 -m pip download --quiet --no-deps --only-binary :all: -d "$cache" scikit-learn scikit-image
fi
python3 -c 'import PIL' 2>/dev/null || python3 -m pip install --quiet pillow
python3 - "$cache" "$out" <<'PY'
import io, pathlib, sys, zipfile
from PIL import Image
cache, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
# scikit-image's photographs; its diagrams, text pages and micrographs are left out.
PHOTOGRAPHS = {"astronaut", "chelsea", "coffee", "motorcycle_left", "motorcycle_right", "color", "brick",
               "grass", "gravel", "camera", "moon", "horse"}
count = 0
for wheel in sorted(cache.glob("*.whl")):
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            path = pathlib.PurePosixPath(name)
            if "/data/" not in name and "/images/" not in name:
                continue
            target = out / (path.stem + ".jpg")
            if path.suffix in (".jpg", ".jpeg"):
                if not target.exists():
                    target.write_bytes(archive.read(name))
                count += 1
            elif path.suffix == ".png" and path.stem in PHOTOGRAPHS:
                if not target.exists():
                    Image.open(io.BytesIO(archive.read(name))).convert("RGB").save(target, "JPEG", quality=92)
                count += 1
print(f"fetch-photos: {count} photos in {out}")
PY
