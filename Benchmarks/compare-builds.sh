#!/usr/bin/env bash
# Two builds of kiroku on one model, alternated round by round (this host moves by up to 25%
# between rounds): p50 ms per image of each, and the median of the rounds' ratios (second / first).
#
#   Benchmarks/compare-builds.sh OLD_KIROKU NEW_KIROKU MODEL.onnx [ROUNDS] [THREADS] [BATCH]
#
# Build the old one from a commit with `git checkout COMMIT && swift build -c release --product kiroku
# && cp .build/release/kiroku /tmp/kiroku-old`, then come back and build the new one.
set -euo pipefail
old=$1 new=$2 model=$3 rounds=${4:-5} threads=${5:-1} batch=${6:-1}
p50() { "$1" bench --model "$model" --threads "$threads" --batch "$batch" --runs 40 --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["ms_per_image_p50"])'; }
ratios=()
for round in $(seq "$rounds"); do
    a=$(p50 "$old"); b=$(p50 "$new")
    ratios+=("$(python3 -c "print($b / $a)")")
    printf 'round %d: old %.2f ms, new %.2f ms\n' "$round" "$a" "$b"
done
python3 -c 'import statistics, sys; r = [float(x) for x in sys.argv[1:]]
print(f"new / old: median {statistics.median(r):.3f} (rounds {min(r):.3f} to {max(r):.3f})")' "${ratios[@]}"
echo "model $(basename "$model"), $threads thread(s), batch $batch, CPU: $(lscpu | sed -n 's/^Model name: *//p') family $(lscpu | sed -n 's/^CPU family: *//p')"
