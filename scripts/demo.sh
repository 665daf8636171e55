#!/usr/bin/env bash
# `make demo`: a private throwaway PostgreSQL under .kiroku/, the schema, real photos (and two
# broken files) enqueued, a worker run until the queue is drained, the results table, the
# advisor's report, then the database stopped and removed. Re-running it works.
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory setup
make --no-print-directory model
swift build -c release --product kiroku
kiroku="$(swift build -c release --show-bin-path)/kiroku"
scripts/fetch-photos.sh .kiroku/photos

# One corrupt file (a JPEG cut off after its header) and one that is not a JPEG at all.
mkdir -p .kiroku/demo
head -c 600 "$(ls .kiroku/photos/*.jpg | head -n 1)" > .kiroku/demo/truncated.jpg
printf 'this is a text file, not a photo\n' > .kiroku/demo/notes.txt
cp .kiroku/photos/*.jpg .kiroku/demo/

rm -rf .kiroku/pg
KIROKU_PG_DIR="$PWD/.kiroku/pg" scripts/with-postgres.sh bash -c '
    set -euo pipefail
    export KIROKU_DATABASE_URL=$KIROKU_TEST_DATABASE_URL KIROKU_LOG_LEVEL=warning
    k='"$kiroku"'
    echo; echo "== kiroku migrate";                 $k migrate
    echo; echo "== kiroku enqueue --uri .kiroku/demo";    $k enqueue --uri .kiroku/demo
    echo; echo "== kiroku enqueue --uri .kiroku/demo (again: same content, no new jobs)"; $k enqueue --uri .kiroku/demo 2>/dev/null
    echo; echo "== kiroku worker --once (one worker: model loaded once, warmed, every job through the queue)"
    KIROKU_LOG_LEVEL=notice $k worker --once --http-port 0 --lock-file "$PWD/.kiroku/demo-worker.lock" --file-root "$PWD/.kiroku/demo"
    echo; echo "== kiroku results --format table"; $k results --format table
    echo; echo "== kiroku advise (sized from what the worker measured)"; $k advise --wait-target 200ms --instance-type c5.xlarge
    echo; echo "== kiroku status";                  $k status
    echo; echo "== kiroku jobs show 1";             $k jobs show 1
'
