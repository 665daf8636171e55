#!/usr/bin/env python3
"""How often each JPEG decode mode agrees on top-1 with a legacy service's full decode.

A shadow comparison sets Kiroku beside a service that usually decodes every pixel (Pillow, OpenCV);
Kiroku decodes at a reduced DCT scale. This measures how much of the disagreement that alone
causes, on large photographs (the size cameras and uploads bring, where DCT scaling applies):

  scripts/decode-agreement.py KIROKU MODEL.onnx [--crops 4] [--out .kiroku/decode-agreement]

Photos: the project's (scripts/fetch-photos.sh) and Debian's wallpaper packages
(plasma-workspace-wallpapers, mate-backgrounds: photographs and some artwork at 2560 to 5640 px),
each also cropped at random to 40-90% of its sides and saved as JPEG (quality 90): a range of
sizes and contents. The reference is the Python pipeline of examples/legacy-service (Pillow full
decode, ONNX Runtime). Compared with it: Pillow at a reduced DCT scale (libjpeg's, as Kiroku's),
`kiroku classify --decode reduced` (the default) and `--decode full`. Prints Markdown.
"""
import argparse
import importlib.util
import json
import math
import pathlib
import random
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ["plasma-workspace-wallpapers", "mate-backgrounds"]


def legacy_pipeline():
    spec = importlib.util.spec_from_file_location("legacy_worker", ROOT / "examples/legacy-service/legacy_worker.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wallpapers(cache):
    """One largest image per wallpaper, from the Debian packages (downloaded, never installed)."""
    cache.mkdir(parents=True, exist_ok=True)
    for package in PACKAGES:
        if not list(cache.glob(f"{package}_*.deb")):
            subprocess.run(["apt-get", "download", package], cwd=cache, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tree = cache / package
        if not tree.exists():
            deb = sorted(cache.glob(f"{package}_*.deb"))[-1]
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)
    best = {}
    for path in sorted(cache.glob("*/usr/share/**/*")):
        if path.suffix.lower() not in (".jpg", ".jpeg", ".png") or "desktop" in path.parts:
            continue
        parts = path.parts
        key = parts[parts.index("wallpapers") + 1] if "wallpapers" in parts else path.stem.split("_")[0]
        with Image.open(path) as image:
            size = image.width * image.height
            if min(image.size) < 1000:
                continue
        if key not in best or size > best[key][0]:
            best[key] = (size, path)
    return [(key, best[key][1]) for key in sorted(best)]


def dataset(out, crops, seed=20261124):
    random.seed(seed)
    images = out / "images"
    images.mkdir(parents=True, exist_ok=True)
    photos = sorted((ROOT / ".kiroku/photos").glob("*.jpg"))
    sources = [(path.stem, path) for path in photos] + wallpapers(ROOT / ".kiroku/cache/debs")
    files = []
    for stem, source in sources:
        with Image.open(source) as opened:
            image = opened.convert("RGB")
        variants = [("whole", (0, 0, image.width, image.height))]
        for n in range(crops if min(image.size) >= 1000 else 0):
            fraction = random.uniform(0.4, 0.9)
            w, h = int(image.width * fraction), int(image.height * random.uniform(0.4, 0.9))
            x, y = random.randint(0, image.width - w), random.randint(0, image.height - h)
            variants.append((f"crop{n}", (x, y, x + w, y + h)))
        for name, box in variants:
            target = images / f"{stem}-{name}.jpg"
            if not target.exists():
                image.crop(box).save(target, "JPEG", quality=90)
            files.append(target)
    return files


def python_top1(legacy, session, sidecar, files, decode):
    results = {}
    for path in files:
        result = legacy.classify(session, sidecar, legacy.preprocess(path.read_bytes(), sidecar, decode))
        results[path.name] = (result["top"][0]["index"], result["food"])
    return results


def kiroku_top1(kiroku, model, files, decode):
    results = {}
    for start in range(0, len(files), 100):
        batch = [str(path) for path in files[start:start + 100]]
        run = subprocess.run([kiroku, "classify", "--json", "--top", "1", "--model", model, "--decode", decode] + batch,
                             capture_output=True, text=True)
        for line in run.stdout.splitlines():
            entry = json.loads(line)
            results[pathlib.Path(entry["file"]).name] = (entry["top"][0]["index"], entry["food"])
    return results


def wilson(successes, trials, z=1.96):
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0, centre - half), min(1, centre + half)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kiroku")
    parser.add_argument("model")
    parser.add_argument("--crops", type=int, default=4)
    parser.add_argument("--out", default=str(ROOT / ".kiroku/decode-agreement"))
    args = parser.parse_args()
    files = dataset(pathlib.Path(args.out), args.crops)
    legacy = legacy_pipeline()
    session, sidecar = legacy.load_model(args.model)
    reference = python_top1(legacy, session, sidecar, files, "full")
    modes = {
        "Pillow, reduced DCT scale": python_top1(legacy, session, sidecar, files, "reduced"),
        "kiroku --decode reduced (default)": kiroku_top1(args.kiroku, args.model, files, "reduced"),
        "kiroku --decode full": kiroku_top1(args.kiroku, args.model, files, "full"),
    }
    sizes = [min(Image.open(path).size) for path in files]
    print(f"{len(files)} JPEGs, shorter side {min(sizes)} to {max(sizes)} px (median {int(np.median(sizes))}); "
          f"reference: the legacy example's pipeline (Pillow full decode, ONNX Runtime)\n")
    print("| decode | top-1 agrees with the reference | 95% interval | food verdict agrees |")
    print("|---|---|---|---|")
    for name, results in modes.items():
        top1 = sum(results[n][0] == reference[n][0] for n in reference)
        food = sum(results[n][1] == reference[n][1] for n in reference)
        low, high = wilson(top1, len(reference))
        print(f"| {name} | {top1}/{len(reference)} ({100 * top1 / len(reference):.1f}%) | {100 * low:.1f}-{100 * high:.1f}% "
              f"| {food}/{len(reference)} ({100 * food / len(reference):.1f}%) |")
    both = modes["kiroku --decode reduced (default)"], modes["kiroku --decode full"]
    only_full = sum(both[1][n][0] == reference[n][0] and both[0][n][0] != reference[n][0] for n in reference)
    only_reduced = sum(both[0][n][0] == reference[n][0] and both[1][n][0] != reference[n][0] for n in reference)
    print(f"\nDiscordant pairs (kiroku full right, reduced wrong / the reverse): {only_full} / {only_reduced}")


if __name__ == "__main__":
    sys.exit(main())
