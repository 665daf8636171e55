#!/usr/bin/env bash
# Inference benchmark (run by `make bench`): `kiroku bench` beside ONNX Runtime on the same model,
# batch and thread count in the same run, with the machine's sgemm peak; prints Markdown tables for
# EfficientNet-Lite0 (the default model) and InceptionV3 (random weights, scripts/make-inception-v3.py).
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
runs=${KIROKU_BENCH_RUNS:-100}
python3 -c 'import onnxruntime, numpy, onnx' 2>/dev/null || python3 -m pip install --quiet onnxruntime numpy onnx
[ -f models/inception-v3-random.onnx ] || python3 scripts/make-inception-v3.py models/inception-v3-random.onnx >/dev/null
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT

echo "## Inference: $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo
declare -A peak
for threads in 1 2; do peak[$threads]=$(OPENBLAS_NUM_THREADS=$threads python3 Benchmarks/sgemm-peak.py); done
echo "sgemm peak (OpenBLAS, 1024^3): ${peak[1]} GFLOP/s on 1 thread, ${peak[2]} on 2."
echo
for model in models/efficientnet-lite0.onnx models/inception-v3-random.onnx; do
    # Same input through both runtimes: the outputs must agree before the speeds mean anything.
    python3 - "$model" "$workdir" <<'PY'
import sys, numpy as np, onnxruntime as ort
model, workdir = sys.argv[1], sys.argv[2]
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
spec = session.get_inputs()[0]
x = np.random.default_rng(5).standard_normal([1] + list(spec.shape[1:])).astype(np.float32)
np.save(f"{workdir}/input.npy", x)
np.save(f"{workdir}/expected.npy", session.run(None, {spec.name: x})[0])
PY
    "$kiroku" infer --model "$model" --input "$workdir/input.npy" --output "$workdir/ours.npy" >/dev/null 2>&1
    agreement=$(python3 -c "import numpy as np; a, b = np.load('$workdir/ours.npy'), np.load('$workdir/expected.npy'); print(f'max |Kiroku - ONNX Runtime| logit difference {float(np.abs(a - b).max()):.1e}, top-1 {\"equal\" if a.argmax() == b.argmax() else \"DIFFERENT\"}')")
    echo "### $(basename "$model"): $agreement"
    echo
    echo "| batch | threads | Kiroku p50 ms/image | ONNX Runtime p50 ms/image | Kiroku / ORT | Kiroku % of sgemm peak | ORT % of peak | Kiroku p99 | session create | new session per image | peak RSS |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for batch in 1 8; do
        # InceptionV3 at batch 8 runs a fifth as many batches (still 160 images) to keep the run short.
        model_runs=$runs
        [ "$batch" = 8 ] && case "$model" in *inception*) model_runs=$((runs / 5)) ;; esac
        for threads in 1 2; do
            ours=$("$kiroku" bench --model "$model" --batch "$batch" --threads "$threads" --runs "$model_runs" --json)
            theirs=$(python3 Benchmarks/onnxruntime-bench.py "$model" "$batch" "$threads" "$model_runs")
            python3 - "$ours" "$theirs" "${peak[$threads]}" <<'PY'
import json, sys
ours, theirs, peak = json.loads(sys.argv[1]), json.loads(sys.argv[2]), float(sys.argv[3])
flops = 2 * ours["multiply_adds_per_image"]
def share(ms): return 100 * flops / (ms / 1000) / 1e9 / peak
print(f"| {ours['batch']} | {ours['threads']} | {ours['ms_per_image_p50']:.2f} | {theirs['ms_per_image_p50']:.2f} | "
      f"{ours['ms_per_image_p50'] / theirs['ms_per_image_p50']:.2f}x | {share(ours['ms_per_image_p50']):.0f}% | "
      f"{share(theirs['ms_per_image_p50']):.0f}% | {ours['ms_per_image_p99']:.2f} | {ours['session_create_ms']:.0f} ms | "
      f"{ours['new_session_per_image_ms']:.1f} ms ({ours['new_session_per_image_ms'] / ours['ms_per_image_p50']:.1f}x) | {ours['peak_rss_mb']:.0f} MB |")
PY
        done
    done
    echo
done
