#!/usr/bin/env bash
# End-to-end benchmark (run by `make bench` under scripts/with-postgres.sh): the same real photos
# through `kiroku worker --once` (enqueued in PostgreSQL, claimed, decoded, classified, results
# stored), through `kiroku classify` (decode + inference, no queue), and the engine alone
# (`kiroku bench`), in one run on one machine. Prints Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
kiroku="$(swift build -c release --show-bin-path)/kiroku"
copies=${KIROKU_BENCH_COPIES:-30}
: "${KIROKU_TEST_DATABASE_URL:?run under scripts/with-postgres.sh}"
export KIROKU_DATABASE_URL=$KIROKU_TEST_DATABASE_URL KIROKU_LOG_LEVEL=warning
scripts/fetch-photos.sh .kiroku/photos >/dev/null
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for _ in $(seq "$copies"); do ls "$PWD"/.kiroku/photos/*.jpg; done > "$list"
images=$(wc -l < "$list")
"$kiroku" migrate >/dev/null

t0=$EPOCHREALTIME; xargs -a "$list" "$kiroku" classify --top 5 >/dev/null; t1=$EPOCHREALTIME
classify_s=$(python3 -c "print($t1 - $t0)")

engine=$("$kiroku" bench --json --runs 100)

"$kiroku" enqueue --no-idempotency-key - < "$list" >/dev/null
t0=$EPOCHREALTIME; worker_out=$("$kiroku" worker --once --http-port 0 --lock-file "$PWD/.kiroku/bench-worker.lock"); t1=$EPOCHREALTIME
worker_s=$(python3 -c "print($t1 - $t0)")

stages=$(psql -X -A -t -F ' ' -c "
    SELECT count(*) FILTER (WHERE state = 'succeeded'),
           extract(epoch FROM max(finished_at) - min(started_at)),
           avg((timings->>'fetch_ms')::float8), avg((timings->>'decode_ms')::float8),
           avg((timings->>'inference_ms')::float8), avg((timings->>'total_ms')::float8),
           percentile_cont(0.5) WITHIN GROUP (ORDER BY (timings->>'total_ms')::float8)
    FROM kiroku.jobs")

python3 - "$images" "$classify_s" "$worker_s" "$engine" "$stages" "$worker_out" <<'PY'
import json, sys
images, classify_s, worker_s = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
engine = json.loads(sys.argv[4])
succeeded, window_s, fetch, decode, infer, total, total_p50 = sys.argv[5].split()
succeeded, window_s = int(succeeded), float(window_s)
classify_rate, worker_rate, window_rate = images / classify_s, images / worker_s, succeeded / window_s
engine_rate = 1000 / engine["ms_per_image_p50"]
print(f"{images} real photos ({images // 17} copies of 17), default model, {engine['threads']} threads, release build; "
      f"worker: {sys.argv[6].strip()}")
print()
print("| path | what it includes | images/s | vs kiroku classify |")
print("|---|---|---|---|")
print(f"| `kiroku worker --once`, whole command | start-up (model load, warm-up, register), claim, decode, inference, results stored | {worker_rate:.1f} | {worker_rate / classify_rate:.0%} |")
print(f"| `kiroku worker --once`, first claim to last result | the same without start-up (from the jobs' started_at / finished_at) | {window_rate:.1f} | {window_rate / classify_rate:.0%} |")
print(f"| `kiroku classify`, whole command | model load, decode, inference, printing | {classify_rate:.1f} | 100% |")
print(f"| `kiroku bench` (engine only, p50) | inference on a prepared tensor | {engine_rate:.1f} | {engine_rate / classify_rate:.0%} |")
print()
print(f"Per job, mean ms (from the stored timings): fetch {float(fetch):.2f}, decode {float(decode):.2f}, "
      f"inference {float(infer):.2f}, claim to result {float(total):.1f} (p50 {float(total_p50):.1f}; it includes waiting "
      f"behind the batch's earlier images).")
print()
print(f"The seed's comparison on this machine (`kiroku bench`): a reused session {engine['ms_per_image_p50']:.1f} ms per image, "
      f"a new session per image {engine['new_session_per_image_ms']:.1f} ms "
      f"({engine['new_session_per_image_ms'] / engine['ms_per_image_p50']:.1f}x); session creation {engine['session_create_ms']:.0f} ms.")
PY
