#!/usr/bin/env bash
# Scaling rules compared on the shipped traces (run by `make bench`): `kiroku simulate --policy all`
# (the advisor untuned, sized so that 90% of jobs wait at most the target; KEDA's rule and the
# backlog rule tuned on each trace to the same objective), and the advisor sized for the mean wait
# alone, for comparison. Prints Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
for trace in Benchmarks/traces/diurnal.csv Benchmarks/traces/burst.csv; do
    echo '```'
    "$kiroku" simulate --trace "$trace" --wait-target 500ms --service-time 0.47 --startup-lag 2m --size-for-percentile 90
    "$kiroku" simulate --trace "$trace" --wait-target 500ms --service-time 0.47 --startup-lag 2m --policy advisor | tail -n 1
    echo '```'
    echo
done
