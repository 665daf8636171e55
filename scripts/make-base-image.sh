#!/usr/bin/env bash
# The runtime base image Deploy/Dockerfile names (debian:bookworm-slim), for buildah on machines
# that cannot pull it from a registry: try the registry first, else debootstrap Debian bookworm
# (minbase) from the configured Debian mirror and import it under the same name.
set -euo pipefail
name="docker.io/library/debian:bookworm-slim"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if buildah inspect --type image "$name" >/dev/null 2>&1; then
    echo "base image: $name present"; exit 0
fi
if buildah pull --quiet "$name" >/dev/null 2>&1; then
    echo "base image: $name pulled"; exit 0
fi
echo "base image: $name not pullable; building it with debootstrap from $mirror"
rootfs=$(mktemp -d /var/tmp/kiroku-rootfs.XXXXXX)
container=""
cleanup() { [ -n "$container" ] && buildah rm "$container" >/dev/null 2>&1; rm -rf "$rootfs"; }
trap cleanup EXIT
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$rootfs.log" 2>&1 \
    || { tail -20 "$rootfs.log"; echo "debootstrap failed (log: $rootfs.log)" >&2; exit 1; }
rm -f "$rootfs.log"
# What the registry's slim image leaves out: downloaded packages, package lists, documentation.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
container=$(buildah from scratch)
buildah add --quiet "$container" "$rootfs" / >/dev/null
buildah config --cmd /bin/bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$container"
buildah commit --quiet --rm "$container" "$name" >/dev/null
container=""
echo "base image: $name built with debootstrap ($(buildah images --noheading --format '{{.Size}}' "$name"))"
