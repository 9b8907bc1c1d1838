#!/usr/bin/env bash
# Prints the container engine to use: PERFWATCH_CONTAINER_ENGINE if set, else docker when its
# engine answers and it has buildx and compose (a docker client alone, or one pointed at
# podman's Docker API, is not enough), else podman when installed.
set -euo pipefail
if [ -n "${PERFWATCH_CONTAINER_ENGINE:-}" ]; then echo "$PERFWATCH_CONTAINER_ENGINE"; exit 0; fi
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 \
  && docker buildx version >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
  echo docker
  exit 0
fi
if command -v podman >/dev/null 2>&1; then echo podman; exit 0; fi
echo "no container engine: install Docker or podman (Debian: apt-get install podman)" >&2
exit 1
