#!/usr/bin/env bash
# npm run images: builds perfwatch's two images from deploy/*.Dockerfile with docker or podman,
# whichever is present (PERFWATCH_CONTAINER_ENGINE chooses), tagged perfwatch-gateway and
# perfwatch-agent (PERFWATCH_IMAGE_TAG, default latest).
#   PERFWATCH_NODE_IMAGE   the Node 24 base image (default: the Dockerfiles' node:24-bookworm-slim)
#   PERFWATCH_BUILD_CA     a CA bundle for a TLS-intercepting proxy between the build and the npm
#                          registry, e.g. /etc/ssl/certs/ca-certificates.crt. It reaches the
#                          npm ci step as a build secret and is never written into an image.
# The tests run exactly this script (with the stand-in base of scripts/standin-images.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
engine="$(bash scripts/container-engine.sh)"
tag="${PERFWATCH_IMAGE_TAG:-latest}"
args=()
if [ -n "${PERFWATCH_NODE_IMAGE:-}" ]; then args+=(--build-arg "NODE_IMAGE=$PERFWATCH_NODE_IMAGE"); fi
if [ -n "${PERFWATCH_BUILD_CA:-}" ]; then
  [ -r "$PERFWATCH_BUILD_CA" ] || { echo "images: PERFWATCH_BUILD_CA=$PERFWATCH_BUILD_CA cannot be read" >&2; exit 1; }
  args+=(--secret "id=build_ca,src=$PERFWATCH_BUILD_CA")
fi
for image in gateway agent; do
  started=$SECONDS
  printf 'images: building perfwatch-%s:%s with %s\n' "$image" "$tag" "$engine" >&2
  "$engine" build "${args[@]}" -f "deploy/$image.Dockerfile" -t "perfwatch-$image:$tag" .
  printf 'images: perfwatch-%s:%s built in %d s\n' "$image" "$tag" "$((SECONDS - started))" >&2
done
# Each build leaves behind, untagged, the images it replaced and its build stages (about 3 GB a
# build of both here): a machine that runs the tests many times a day filled its disk with them.
# Those of perfwatch's builds older than an hour go; the latest stay, the next build's cache.
"$engine" image prune -f --filter "label=org.perfwatch.build" --filter "until=1h" >/dev/null 2>&1 ||
  printf 'images: could not prune the untagged images of earlier builds\n' >&2
