#!/usr/bin/env bash
# Inference benchmark (run by `make bench`): `kiroku bench` beside ONNX Runtime on the same model,
# batch and thread count in the same run, with the machine's sgemm peak; prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
model=${1:-models/efficientnet-lite0.onnx}
runs=${KIROKU_BENCH_RUNS:-100}
python3 -c 'import onnxruntime, numpy' 2>/dev/null || python3 -m pip install --quiet onnxruntime numpy

echo "## Inference: $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(basename "$model")"
echo
declare -A peak
for threads in 1 2; do peak[$threads]=$(OPENBLAS_NUM_THREADS=$threads python3 Benchmarks/sgemm_peak.py); done
echo "sgemm peak (OpenBLAS, 1024^3): ${peak[1]} GFLOP/s on 1 thread, ${peak[2]} on 2."
echo
echo "| batch | threads | Kiroku p50 ms/image | ONNX Runtime p50 ms/image | Kiroku / ORT | Kiroku % of sgemm peak | ORT % of peak | Kiroku p99 | session create | new session per image | peak RSS |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for batch in 1 8; do
    for threads in 1 2; do
        ours=$("$kiroku" bench --model "$model" --batch "$batch" --threads "$threads" --runs "$runs" --json)
        theirs=$(python3 Benchmarks/onnxruntime_bench.py "$model" "$batch" "$threads" "$runs")
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
