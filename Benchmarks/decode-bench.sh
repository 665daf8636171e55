#!/usr/bin/env bash
# Image input benchmark (run by `make bench`): decode + preprocess to the default model's input,
# `kiroku bench --decode-only` beside Pillow (Benchmarks/pillow-decode-bench.py) on the same real
# photos in the same run. Prints Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
runs=${KIROKU_BENCH_DECODES:-340}
if [ ! -f .kiroku/vision-fixtures/reference.json ]; then
    scripts/fetch-photos.sh .kiroku/photos >/dev/null
    python3 scripts/make-vision-fixtures.py models/efficientnet-lite0.onnx .kiroku/photos .kiroku/vision-fixtures >/dev/null
fi
photos=(.kiroku/vision-fixtures/photos/*.jpg)
one=$("$kiroku" bench --decode-only --images "${photos[@]}" --runs "$runs" --threads 1 --json)
two=$("$kiroku" bench --decode-only --images "${photos[@]}" --runs "$runs" --threads 2 --json)
pillow=$(python3 Benchmarks/pillow-decode-bench.py "$runs" "${photos[@]}")
echo "## Image input: $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo
python3 - "$one" "$two" "$pillow" <<'PY'
import json, sys
one, two, pillow = (json.loads(a) for a in sys.argv[1:4])
ours = one["ms_per_image_mean"]
print(f"{one['images']} real photos ({one['megapixels_mean']:.1f} MP mean, some above 4 MP, some progressive), {one['decodes']} decodes per recipe, one thread, ms per image (mean):")
print()
print("| recipe | ms per image | Kiroku / this |")
print("|---|---|---|")
print(f"| Kiroku: TurboJPEG at the smallest DCT scale leaving a 2x resize, antialiased bicubic, normalise | {ours:.2f} | 1.00x |")
for key, name in (("reference", "Pillow reference recipe (full decode, crop, bicubic resize)"),
                  ("draft", "Pillow with Image.draft to the smallest sufficient scale"),
                  ("draft_2x", "Pillow with Image.draft to twice that (Kiroku's scale)")):
    theirs = pillow[f"{key}_ms_per_image_mean"]
    print(f"| {name} | {theirs:.2f} | {ours / theirs:.2f}x |")
print()
print(f"Spread over cores: {one['images_per_second']:.0f} images/s on 1 thread, {two['images_per_second']:.0f} images/s on 2.")
PY
echo
echo "Fidelity at each scale (Kiroku's own figures are printed by \`make test\`):"
echo
python3 Benchmarks/pillow-draft-fidelity.py models/efficientnet-lite0.onnx .kiroku/vision-fixtures | sed 's/^/- /'
