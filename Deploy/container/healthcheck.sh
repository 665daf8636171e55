#!/bin/bash
# The image's HEALTHCHECK: GET /healthz on the local worker (or autoscaler) with bash alone, so
# the slim runtime image needs no curl. Port: KIROKU_HEALTH_PORT (worker 9464, autoscaler 9465).
set -eu
port="${KIROKU_HEALTH_PORT:-9464}"
exec 3<>"/dev/tcp/127.0.0.1/${port}"
printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
read -r -t 5 status_line <&3
case "$status_line" in
    "HTTP/1."?" 200 "*) exit 0 ;;
    *) echo "healthz on port ${port}: ${status_line:-no answer}" >&2; exit 1 ;;
esac
