#!/usr/bin/env bash
# make container-test: the image (make image) run against a real PostgreSQL, the way an
# orchestrator runs it. Run under scripts/with-postgres.sh (PGHOST/PGPORT/PGUSER set).
#   1. `kiroku migrate` inside the image;
#   2. photos and one truncated JPEG enqueued from the host;
#   3. `kiroku worker --once` inside the image (as its non-root user, with its baked model):
#      every photo succeeds, the truncated file fails permanently with its reason;
#   4. a long-running worker inside the image: the image's HEALTHCHECK command passes once it is
#      up; SIGTERM (what `docker stop` sends) while it has work: it hands back what it has not
#      started, exits 0, and no job is left running.
#
#   scripts/container-test.sh IMAGE PHOTO_DIR HOST_KIROKU
set -euo pipefail
image=$1 photos=$2 kiroku=$3
: "${PGHOST:?run under scripts/with-postgres.sh}" "${PGPORT:?}" "${PGUSER:?}"
url="postgresql://${PGUSER}@${PGHOST}:${PGPORT}/postgres"
export KIROKU_DATABASE_URL=$url
work=$(mktemp -d)
containers=()
worker_pid=""
cleanup() {
    [ -n "$worker_pid" ] && kill -KILL "$worker_pid" 2>/dev/null
    for c in "${containers[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "container-test: FAIL: $*" >&2; exit 1; }
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d postgres -c "$1"; }
new_container() {
    local c
    c=$(buildah from --pull-never --quiet "$image")
    buildah config --env KIROKU_DATABASE_URL="$url" --env KIROKU_LOG_LEVEL=info "$c"
    containers+=("$c")
    echo "$c"
}
in_container() { local c=$1; shift; buildah run --isolation chroot --network host "$c" -- "$@"; }

ctr=$(new_container)
uid=$(in_container "$ctr" id -u)
[ "$uid" != 0 ] || fail "the image runs as root"
echo "container-test: image $image runs as uid $uid"

in_container "$ctr" kiroku migrate
migrations=$(sql "SELECT count(*) FROM kiroku.schema_migrations")
[ "$migrations" -ge 1 ] || fail "migrate inside the image applied nothing"
echo "container-test: migrate inside the image: $migrations migrations applied"

mapfile -t files < <(find "$photos" -maxdepth 1 -name '*.jpg' | sort | head -n 20)
[ "${#files[@]}" -ge 10 ] || fail "too few photos in $photos (run make test's photo fetch first)"
head -c 3000 "${files[0]}" > "$work/truncated.jpg"
"$kiroku" enqueue --no-idempotency-key "${files[@]}" "$work/truncated.jpg" >/dev/null

in_container "$ctr" kiroku worker --once --http-port 0 --lock-file /tmp/kiroku-worker.lock 2>"$work/once.log" \
    || { cat "$work/once.log" >&2; fail "worker --once inside the image exited non-zero"; }
succeeded=$(sql "SELECT count(*) FROM kiroku.jobs WHERE state = 'succeeded' AND result ? 'top'")
failed=$(sql "SELECT count(*) FROM kiroku.jobs WHERE state = 'failed' AND error_kind = 'permanent' AND error <> ''")
[ "$succeeded" = "${#files[@]}" ] || { cat "$work/once.log" >&2; fail "$succeeded of ${#files[@]} photos succeeded"; }
[ "$failed" = 1 ] || fail "the truncated JPEG did not fail permanently with a reason ($failed failed)"
echo "container-test: worker --once inside the image: ${#files[@]} photos succeeded, the truncated JPEG failed: $(sql "SELECT error FROM kiroku.jobs WHERE state = 'failed'")"

# A long-running worker, stopped the way an orchestrator stops it.
for _ in 1 2 3 4 5 6 7 8 9 10; do "$kiroku" enqueue --no-idempotency-key "${files[@]}" >/dev/null; done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
running=$(new_container)
buildah config --env KIROKU_HEALTH_PORT="$port" "$running"
buildah run --isolation chroot --network host "$running" -- \
    kiroku worker --http-port "$port" --http-host 127.0.0.1 --lock-file /tmp/kiroku-worker.lock --max-batch 4 \
    2>"$work/worker.log" &
worker_pid=$!
probe=$(new_container)
buildah config --env KIROKU_HEALTH_PORT="$port" "$probe"
healthy=""
for _ in $(seq 1 120); do
    if in_container "$probe" kiroku-healthcheck 2>/dev/null; then healthy=yes; break; fi
    sleep 0.5
done
[ -n "$healthy" ] || { cat "$work/worker.log" >&2; fail "the image's HEALTHCHECK never passed"; }
echo "container-test: the image's HEALTHCHECK passes against the running worker"
# Wait until it has finished a few jobs, so the SIGTERM lands mid-queue.
for _ in $(seq 1 200); do
    [ "$(sql "SELECT count(*) FROM kiroku.jobs WHERE state = 'succeeded'")" -gt $(( ${#files[@]} + 8 )) ] && break
    sleep 0.1
done
# The worker process itself (as `docker stop` signals the container's PID 1).
pid=$(pgrep -f -n "kiroku worker --http-port $port") || fail "worker process not found"
kill -TERM "$pid"
status=0
wait "$worker_pid" || status=$?
worker_pid=""
grep -q "stopping: finishing jobs in inference" "$work/worker.log" || { cat "$work/worker.log" >&2; fail "no drain logged after SIGTERM"; }
grep -q "worker stopped" "$work/worker.log" || { cat "$work/worker.log" >&2; fail "no clean stop logged"; }
[ "$status" = 0 ] || { cat "$work/worker.log" >&2; fail "the worker exited $status after SIGTERM"; }
left_running=$(sql "SELECT count(*) FROM kiroku.jobs WHERE state = 'running'")
[ "$left_running" = 0 ] || fail "$left_running jobs left running after the drain"
read -r done_jobs queued <<<"$(sql "SELECT count(*) FILTER (WHERE state = 'succeeded'), count(*) FILTER (WHERE state = 'queued') FROM kiroku.jobs" | tr '|' ' ')"
echo "container-test: SIGTERM: exit 0, nothing left running ($done_jobs succeeded, $queued handed back to the queue)"
echo "container-test: passed"
