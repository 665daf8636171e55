#!/usr/bin/env bash
# Scaling rules compared on the shipped traces (run by `make bench`): `kiroku simulate --policy all`
# (the advisor untuned, sized so that 90% of jobs wait at most the target; KEDA's rule and the
# backlog rule tuned on each trace to the same objective; AWS target tracking with its own alarms
# on the acceptable backlog AWS's guide derives). Diurnal day: then the advisor sized for
# the mean wait alone, for comparison. Burst: first as a surprise, then announced with
# `--expect 01:00-01:15=24` (a scheduled re-import; every rule gets the forecast's hosts as a
# scheduled floor), then enqueued an hour ahead as scheduled jobs (`--enqueued-ahead 01:00-01:15=20`:
# 20/s of the window's arrivals have a run_after; no `--expect`). Prints Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
simulate() { "$kiroku" simulate --wait-target 500ms --service-time 0.47 --startup-lag 2m "$@"; }
block() { echo '```'; "$@"; echo '```'; echo; }
diurnal=Benchmarks/traces/diurnal.csv burst=Benchmarks/traces/burst.csv
block eval 'simulate --trace $diurnal --wait-percentile 90; simulate --trace $diurnal --policy advisor | tail -n 1'
block simulate --trace "$burst" --wait-percentile 90
block simulate --trace "$burst" --wait-percentile 90 --expect 01:00-01:15=24
block simulate --trace "$burst" --wait-percentile 90 --enqueued-ahead 01:00-01:15=20
