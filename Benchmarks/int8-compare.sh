#!/usr/bin/env bash
# One row of the int8 tables (int8-bench.sh, int8-families.sh): Kiroku fp32, Kiroku int8 (its
# layers on integer or float kernels as the session chooses on this CPU), ONNX Runtime fp32 and
# int8 on the same two files, $ROUNDS rounds alternating the four; each cell the median over the
# rounds, each ratio the median of the rounds' ratios.
#   Benchmarks/int8-compare.sh FLOAT.onnx QUANTIZED.onnx BATCH THREADS RUNS ROUNDS LABEL...
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
float=$1 quantized=$2 batch=$3 threads=$4 runs=$5 rounds=$6
shift 6
samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
for round in $(seq 1 "$rounds"); do
    fp32=$("$kiroku" bench --model "$float" --batch "$batch" --threads "$threads" --runs "$runs" --json)
    int8=$("$kiroku" bench --model "$quantized" --batch "$batch" --threads "$threads" --runs "$runs" --json)
    peer32=$(python3 Benchmarks/onnxruntime-bench.py "$float" "$batch" "$threads" "$runs")
    peer8=$(python3 Benchmarks/onnxruntime-bench.py "$quantized" "$batch" "$threads" "$runs")
    printf '%s\t%s\t%s\t%s\n' "$fp32" "$int8" "$peer32" "$peer8" >> "$samples"
done
python3 - "$samples" "$@" <<'PY'
import json, statistics, sys
rows = [[json.loads(cell) for cell in line.rstrip("\n").split("\t")] for line in open(sys.argv[1])]
ms = lambda r: r["ms_per_image_p50"]
fp32, int8, peer32, peer8 = (statistics.median(ms(row[i]) for row in rows) for i in range(4))
ratio = lambda f: statistics.median(f(row) for row in rows)
layers = rows[-1][1].get("integer_layers") or {}
print(f"| {' | '.join(sys.argv[2:])} | {fp32:.2f} | {int8:.2f} | {peer32:.2f} | {peer8:.2f} "
      f"| {ratio(lambda r: ms(r[0]) / ms(r[1])):.2f}x | {ratio(lambda r: ms(r[2]) / ms(r[3])):.2f}x "
      f"| {ratio(lambda r: ms(r[1]) / ms(r[3])):.2f}x | {layers.get('integer', 0)} of {layers.get('quantized', 0)} |")
PY
