#!/usr/bin/env bash
# int8 beyond EfficientNet-Lite0 (issue 42), by family: the convolutional classifiers of the zoo
# (`make zoo` exports them to .kiroku/zoo, or KIROKU_ZOO=DIR; torchvision, random weights with BatchNorm calibrated
# on the project's photos, opset 17) quantized by `kiroku quantize` on the project's photos with
# its defaults, then Benchmarks/int8-compare.sh on each (Kiroku and ONNX Runtime, fp32 and int8,
# alternated rounds), batch KIROKU_BATCH (1), THREADS thread(s). Not in
# `make bench` (it needs the zoo): `[KIROKU_BATCH=8] Benchmarks/int8-families.sh [THREADS]`.
# KIROKU_QUANTIZED=DIR keeps the quantized models there and reuses them on the next run. The
# exports have a fixed batch of 1: for a larger batch their input's and output's first dimension
# is made symbolic first (a family whose graph fixes the batch elsewhere fails its row).
# The held-out set: KIROKU_ZOO=.kiroku/zoo-timm KIROKU_ZOO_PREFIX=timm KIROKU_FAMILIES="dla34 ..."
# (`make zoo-heldout`'s exports).
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
threads=${1:-1}
batch=${KIROKU_BATCH:-1}
runs=${KIROKU_BENCH_RUNS:-50}
rounds=${KIROKU_BENCH_ROUNDS:-3}
zoo=${KIROKU_ZOO:-.kiroku/zoo}
prefix=${KIROKU_ZOO_PREFIX:-tv}
families=${KIROKU_FAMILIES:-"resnet18 resnext50_32x4d mobilenet_v2 mobilenet_v3_large efficientnet_b0 regnet_y_400mf densenet121 shufflenet_v2_x1_0 googlenet"}
[ -d "$zoo" ] || { echo "int8-families: no $zoo: run make zoo first" >&2; exit 2; }
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
models=${KIROKU_QUANTIZED:-$workdir}
mkdir -p "$models"

echo "## int8 by family: $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), batch $batch, $threads thread(s)"
echo
echo "| family | Kiroku fp32, ms | Kiroku int8, ms | ORT fp32, ms | ORT int8, ms | Kiroku int8 speed-up | ORT's | Kiroku int8 / ORT int8 | integer layers |"
echo "|---|---|---|---|---|---|---|---|---|"
for family in $families; do
    float="$zoo/${prefix}_${family}_torchscript_opset17.onnx"
    [ -f "$float" ] || { echo "| $family | (not in the zoo) |||||||" ; continue; }
    # A sidecar for the export: the default model's, with the export's input and output names and size, and ImageNet's normalisation.
    python3 - "$float" models/efficientnet-lite0.json "$models/$family.json" <<'PY'
import json, sys, onnx
model = onnx.load(sys.argv[1], load_external_data=False)
sidecar = json.load(open(sys.argv[2]))
sidecar["name"] = sys.argv[3].rsplit("/", 1)[-1][:-5]
sidecar["input"]["name"], sidecar["output"]["name"] = model.graph.input[0].name, model.graph.output[0].name
dims = model.graph.input[0].type.tensor_type.shape.dim
sidecar["input"]["height"], sidecar["input"]["width"] = dims[2].dim_value, dims[3].dim_value
sidecar["preprocessing"].update({"mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]})
json.dump(sidecar, open(sys.argv[3], "w"))
PY
    name=$family
    if [ "$batch" = 1 ]; then
        cp "$float" "$models/$name.onnx"
    else
        name=$family-batched
        cp "$models/$family.json" "$models/$name.json"
        python3 scripts/symbolic_batch.py "$float" "$models/$name.onnx"
    fi
    [ -f "$models/$name.int8.onnx" ] || "$kiroku" quantize --model "$models/$name.onnx" --calibrate .kiroku/photos \
        --output "$models/$name.int8.onnx" --force --speed-runs 0 >/dev/null 2>"$workdir/quantize.err" \
        || { echo "| $family | quantize failed: $(tail -1 "$workdir/quantize.err") |||||||"; continue; }
    Benchmarks/int8-compare.sh "$models/$name.onnx" "$models/$name.int8.onnx" "$batch" "$threads" "$runs" "$rounds" "$family" 2>"$workdir/compare.err" \
        || echo "| $family | failed: $(grep -m1 error "$workdir/compare.err") |||||||"
done
