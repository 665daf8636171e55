#!/usr/bin/env bash
# `make demo`: a private throwaway PostgreSQL under .kiroku/, the schema, then the move Kiroku
# exists for, in small: a stand-in legacy service (examples/legacy-service, Python on ONNX Runtime,
# SQL only) serves pool gpu while a Kiroku worker serves pool cpu, half the traffic routed to each
# and 30% of jobs shadowed to the other pool; then the results, the shadow comparison, the
# advisor's cut-over plan and its HTML report, and a producer waiting for its answers; the live
# dashboard (as a kiroku_viewer login) runs throughout and its address is printed. The
# database is stopped and removed at the end; re-running it works.
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory setup
make --no-print-directory model
swift build -c release --product kiroku
kiroku="$(swift build -c release --show-bin-path)/kiroku"
scripts/fetch-photos.sh .kiroku/photos

# One corrupt file (a JPEG cut off after its header) and one that is not a JPEG at all.
rm -rf .kiroku/demo
mkdir -p .kiroku/demo
head -c 600 "$(ls .kiroku/photos/*.jpg | head -n 1)" > .kiroku/demo/truncated.jpg
printf 'this is a text file, not a photo\n' > .kiroku/demo/notes.txt
cp .kiroku/photos/*.jpg .kiroku/demo/
report="$PWD/.kiroku/demo-advice.html"

rm -rf .kiroku/pg
KIROKU_PG_DIR="$PWD/.kiroku/pg" scripts/with-postgres.sh bash -c '
    set -euo pipefail
    export KIROKU_DATABASE_URL=$KIROKU_TEST_DATABASE_URL KIROKU_LOG_LEVEL=warning
    k='"$kiroku"' report='"$report"'
    echo; echo "== kiroku migrate";                 $k migrate
    echo; echo "== kiroku dashboard (a login granted kiroku_viewer only: aggregates, never an image or a URI)"
    psql -q "$KIROKU_DATABASE_URL" -c "CREATE ROLE demo_viewer LOGIN IN ROLE kiroku_viewer"
    viewer_url=${KIROKU_DATABASE_URL/\/\/postgres@/\/\/demo_viewer@}
    $k dashboard --database-url "$viewer_url" --listen 127.0.0.1:0 > .kiroku/demo-dashboard.out 2> .kiroku/demo-dashboard.log &
    dashboard=$!
    trap "kill -TERM $dashboard 2>/dev/null || true" EXIT
    for _ in $(seq 100); do grep -q "^dashboard: " .kiroku/demo-dashboard.out && break; sleep 0.1; done
    echo "open $(sed -n "s/^dashboard: //p" .kiroku/demo-dashboard.out) to watch the move (it closes when the demo ends; KIROKU_DEMO_HOLD=1 make demo keeps it open until Enter)"
    echo; echo "== kiroku route set cpu=50 gpu=50 (parallel running: half the jobs to each pool)"; $k route set cpu=50 gpu=50
    echo; echo "== kiroku shadow set 30% --pools cpu,gpu (a copy of 30% of jobs to the other pool, to compare)"; $k shadow set 30% --pools cpu,gpu
    echo; echo "== kiroku enqueue --uri .kiroku/demo";    $k enqueue --uri .kiroku/demo
    echo; echo "== kiroku enqueue --uri .kiroku/demo (again: same content, no new jobs)"; $k enqueue --uri .kiroku/demo 2>/dev/null
    echo; echo "== the legacy service serves pool gpu (examples/legacy-service/legacy_worker.py: Python, ONNX Runtime, SQL only)"
    python3 examples/legacy-service/legacy_worker.py --pool gpu --model models/efficientnet-lite0.onnx --instance-type g4dn.xlarge \
        --file-root "$PWD/.kiroku/demo" --idle-exit 3 &
    legacy=$!
    echo; echo "== kiroku worker --once --pool cpu --decode full (model loaded once, warmed, every job through the queue;"
    echo "   full decoding while shadowed, so the comparison measures the model, not the decoder)"
    KIROKU_LOG_LEVEL=notice $k worker --once --pool cpu --decode full --instance-type c5.xlarge --http-port 0 \
        --lock-file "$PWD/.kiroku/demo-worker.lock" --file-root "$PWD/.kiroku/demo"
    wait $legacy
    echo; echo "== kiroku results --format table"; $k results --format table
    echo; echo "== kiroku shadow show";             $k shadow show
    echo; echo "== kiroku advise --plan --from gpu --html (how many c5 hosts at each step of the move, and what it costs)"
    $k advise --plan --from gpu --wait-target 200ms --html "$report"
    echo; echo "== kiroku enqueue --wait (a producer sees its answers; a worker runs in the background)"
    $k worker --pool cpu --http-port 0 --lock-file "$PWD/.kiroku/demo-worker.lock" --file-root "$PWD/.kiroku/demo" &
    worker=$!
    $k enqueue --wait --timeout 120s --pool cpu --no-idempotency-key $(ls .kiroku/demo/*.jpg | head -n 3)
    kill -TERM $worker; wait $worker
    echo; echo "== kiroku status";                  $k status
    echo; echo "== kiroku jobs show 1";             $k jobs show 1
    echo; echo "The advisor'"'"'s HTML report (plan, pools, charts): $report"
    if [ -n "${KIROKU_DEMO_HOLD:-}" ]; then echo "The dashboard stays open: press Enter to stop it and remove the database."; read -r _; fi
    kill -TERM $dashboard; wait $dashboard
'
