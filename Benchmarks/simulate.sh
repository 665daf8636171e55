#!/usr/bin/env bash
# Scaling rules compared on the shipped traces (run by `make bench`): `kiroku simulate --policy all`
# (the advisor untuned; KEDA's rule and the backlog rule tuned on each trace to the same
# objective). Prints Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
for trace in Benchmarks/traces/diurnal.csv Benchmarks/traces/burst.csv; do
    echo '```'
    "$kiroku" simulate --trace "$trace" --wait-target 500ms --service-time 0.47 --startup-lag 2m
    echo '```'
    echo
done
