#!/usr/bin/env bash
# int8 benchmark (run by `make bench`): a QDQ model on Kiroku beside the same float model, and the
# same two on ONNX Runtime, batch 1 and 8, 1 and 2 threads, alternated rounds (Benchmarks/int8-compare.sh:
# this host's rounds differ by up to 25%). Models: EfficientNet-Lite0 quantized by `kiroku quantize` on the
# project's photos, and InceptionV3 (random weights) quantized by ONNX Runtime's quantize_static on
# random inputs (a speed measurement only). Before the speeds, each QDQ model's output on Kiroku is
# checked against ONNX Runtime's plain operator semantics (no graph optimisation).
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
runs=${KIROKU_BENCH_RUNS:-100}
rounds=${KIROKU_BENCH_ROUNDS:-3}
python3 -c 'import onnxruntime, numpy, onnx' 2>/dev/null || python3 -m pip install --quiet onnxruntime numpy onnx
[ -f models/inception-v3-random.onnx ] || python3 scripts/make-inception-v3.py models/inception-v3-random.onnx >/dev/null
[ -f .kiroku/photos/coffee.jpg ] || scripts/fetch-photos.sh >/dev/null
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT

"$kiroku" quantize --model models/efficientnet-lite0.onnx --calibrate .kiroku/photos --output "$workdir/efficientnet-lite0.int8.onnx" \
    --force >/dev/null 2>&1
python3 - models/inception-v3-random.onnx "$workdir/inception-v3-random.int8.onnx" <<'PY'
import sys, numpy as np, onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
source, target = sys.argv[1], sys.argv[2]
spec = ort.InferenceSession(source, providers=["CPUExecutionProvider"]).get_inputs()[0]
class Random(CalibrationDataReader):
    def __init__(self):
        rng = np.random.default_rng(3)
        self.batches = iter([{spec.name: rng.standard_normal([1] + list(spec.shape[1:])).astype(np.float32)} for _ in range(4)])
    def get_next(self):
        return next(self.batches, None)
quantize_static(source, target, Random(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
PY

echo "## int8: $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo
for pair in "models/efficientnet-lite0.onnx $workdir/efficientnet-lite0.int8.onnx" \
            "models/inception-v3-random.onnx $workdir/inception-v3-random.int8.onnx"; do
    read -r float quantized <<<"$pair"
    agreement=$(python3 - "$kiroku" "$quantized" "$workdir" <<'PY'
import subprocess, sys, numpy as np, onnxruntime as ort
kiroku, model, workdir = sys.argv[1:]
options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
spec = session.get_inputs()[0]
x = np.random.default_rng(5).standard_normal([1] + list(spec.shape[1:])).astype(np.float32)
np.save(f"{workdir}/input.npy", x)
subprocess.run([kiroku, "infer", "--integer-layers", "all", "--model", model, "--input", f"{workdir}/input.npy", "--output", f"{workdir}/ours.npy"],
               check=True, capture_output=True)
ours, theirs = np.load(f"{workdir}/ours.npy"), session.run(None, {spec.name: x})[0]
print(f"max |Kiroku int8 - ONNX Runtime plain QDQ| {float(np.abs(ours - theirs).max()):.2g} "
      f"(largest logit {float(np.abs(theirs).max()):.2g}), top-1 {'equal' if ours.argmax() == theirs.argmax() else 'DIFFERENT'}")
PY
)
    echo "### $(basename "$float" .onnx): $agreement"
    echo
    echo "| batch | threads | Kiroku fp32, ms | Kiroku int8, ms | ORT fp32, ms | ORT int8, ms | Kiroku int8 speed-up over its fp32 | ORT's | Kiroku int8 / ORT int8 | integer layers chosen |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for batch in 1 8; do
        # As in inference-bench.sh: InceptionV3 at batch 8 runs a fifth as many batches.
        model_runs=$runs
        [ "$batch" = 8 ] && case "$float" in *inception*) model_runs=$((runs / 5)) ;; esac
        for threads in 1 2; do
            Benchmarks/int8-compare.sh "$float" "$quantized" "$batch" "$threads" "$model_runs" "$rounds" "$batch" "$threads"
        done
    done
    echo
done
