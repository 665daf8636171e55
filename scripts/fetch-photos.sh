#!/usr/bin/env bash
# Fetches real photographs that PyPI packages ship (never committed) into a directory:
#   scripts/fetch-photos.sh [DIR]      (default: .kiroku/photos)
# Sources: scikit-learn's sample images (china.jpg, flower.jpg) and scikit-image's data set
# (rocket.jpg, retina.jpg, hubble_deep_field.jpg). Wheels are cached in .kiroku/cache.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.kiroku/photos}
cache=.kiroku/cache/wheels
mkdir -p "$out" "$cache"
if [ -z "$(ls "$cache"/scikit_learn-*.whl 2>/dev/null)" ] || [ -z "$(ls "$cache"/scikit_image-*.whl 2>/dev/null)" ]; then
    python3 -m pip download --quiet --no-deps --only-binary :all: -d "$cache" scikit-learn scikit-image
fi
python3 - "$cache" "$out" <<'PY'
import pathlib, sys, zipfile
cache, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
count = 0
for wheel in sorted(cache.glob("*.whl")):
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.lower().endswith((".jpg", ".jpeg")) and ("/data/" in name or "/images/" in name):
                target = out / pathlib.Path(name).name
                if not target.exists():
                    target.write_bytes(archive.read(name))
                count += 1
print(f"fetch-photos: {count} photos in {out}")
PY
