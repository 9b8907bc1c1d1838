#!/usr/bin/env bash
# Builds local stand-ins for the public images the shipped files start from, on a machine that
# reaches no container registry (this project's CI): the tests build perfwatch's own images on
# them and run the compose stack with them. A user with a registry never needs this script.
#   localhost/perfwatch-standin/debian:bookworm            Debian minbase (mmdebstrap), busybox wget
#   localhost/perfwatch-standin/node:24-bookworm-slim       that + Node 24 (the npm package node@24)
#                                                           and npm, user node (uid 1000), like the
#                                                           official node:24-bookworm-slim
#   localhost/perfwatch-standin/nats:2                      that + the nats-server setup built,
#                                                           entrypoint nats-server (as nats:2.11-alpine)
#   localhost/perfwatch-standin/mongo:ferretdb              that + FerretDB (SQLite) on 27017 with its
#                                                           data in /data/db, as mongo:8 keeps it
#   localhost/perfwatch-standin/prometheus:debian           that + Debian's prometheus, run in
#                                                           /prometheus (as prom/prometheus)
# The stand-ins EXPOSE no port: podman 4.3's Docker API lists an exposed port nobody published
# as a binding without a host port, and testcontainers then waits for it forever.
# Each image carries a label with the hash of what it was built from; an image whose label
# matches is kept, so a second run takes a second. Needs podman (or docker) and, for the
# Debian root, mmdebstrap; scripts/setup.sh installs both for the tests.
# Usage: scripts/standin-images.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { printf 'standin-images: %s\n' "$*" >&2; }
die() { printf 'standin-images: error: %s\n' "$*" >&2; exit 1; }

engine="$(bash scripts/container-engine.sh)"
prefix=localhost/perfwatch-standin
node_bin="$root/node_modules/node/bin/node"
# The npm that runs this, found by its own path: `npm root -g` answers Node 24's prefix when
# node_modules/node/bin comes first on PATH (running vitest by hand), where no npm lives.
npm_cli="$(readlink -f "$(command -v npm)")"
case "$npm_cli" in
  */npm/bin/npm-cli.js) npm_dir="${npm_cli%/bin/npm-cli.js}" ;;
  *) npm_dir="$(npm root -g)/npm" ;;
esac
[ -x "$node_bin" ] || die "Node 24 is missing at $node_bin: run npm ci first"
[ -f "$npm_dir/bin/npm-cli.js" ] || die "npm is missing at $npm_dir"
for tool in nats-server ferretdb; do
  [ -x ".tools/bin/$tool" ] || die ".tools/bin/$tool is missing: run scripts/setup.sh test first"
done

stamp_of() { # image -> its build stamp, or nothing
  "$engine" image inspect --format '{{ index .Labels "perfwatch.standin" }}' "$1" 2>/dev/null || true
}
hash_of() { sha256sum "$@" | sha256sum | cut -c1-16; }
script_hash="$(hash_of "${BASH_SOURCE[0]}")"

# 1. Debian bookworm minbase, the root every stand-in shares.
debian="$prefix/debian:bookworm"
if [ "$(stamp_of "$debian")" != "$script_hash" ]; then
  command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: run 'sudo apt-get install mmdebstrap'"
  say "building $debian with mmdebstrap (once; about 30 s)"
  tar="$(mktemp --suffix=.tar)"
  trap 'rm -f "$tar"' EXIT
  # busybox gives the wget the official alpine NATS image has, for the compose health check.
  mmdebstrap --quiet --variant=minbase --include=ca-certificates,busybox \
    --customize-hook='chroot "$1" ln -s /bin/busybox /usr/local/bin/wget' bookworm "$tar" \
    "deb http://deb.debian.org/debian bookworm main" "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main"
  "$engine" import --change "LABEL perfwatch.standin=$script_hash" --change 'CMD ["bash"]' "$tar" "$debian" >/dev/null
  rm -f "$tar"
fi

build() { # image stamp context-dir containerfile-text
  local image="$1" stamp="$2" context="$3"
  if [ "$(stamp_of "$image")" = "$stamp" ]; then return; fi
  say "building $image"
  printf '%s\n' "$4" | "$engine" build --quiet --label "perfwatch.standin=$stamp" -t "$image" -f - "$context" >/dev/null
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 2. Node 24 and npm, as the official slim image lays them out.
mkdir -p "$work/node/bin" "$work/node/lib/node_modules"
cp "$node_bin" "$work/node/bin/node"
cp -r "$npm_dir" "$work/node/lib/node_modules/npm"
node_stamp="$script_hash-$(hash_of "$node_bin" "$npm_dir/package.json")"
build "$prefix/node:24-bookworm-slim" "$node_stamp" "$work/node" "FROM $debian
COPY bin/node /usr/local/bin/node
COPY lib/node_modules/npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
CMD [\"node\"]"

# 3. NATS and the MongoDB-wire server, from the binaries setup built.
mkdir -p "$work/servers"
cp .tools/bin/nats-server .tools/bin/ferretdb "$work/servers/"
build "$prefix/nats:2" "$script_hash-$(hash_of .tools/bin/nats-server)" "$work/servers" "FROM $debian
COPY nats-server /usr/local/bin/nats-server
ENTRYPOINT [\"nats-server\"]"
build "$prefix/mongo:ferretdb" "$script_hash-$(hash_of .tools/bin/ferretdb)" "$work/servers" "FROM $debian
COPY ferretdb /usr/local/bin/ferretdb
RUN mkdir -p /data/db
VOLUME /data/db
ENTRYPOINT [\"ferretdb\", \"--listen-addr=:27017\", \"--handler=sqlite\", \"--sqlite-url=file:/data/db/\", \"--state-dir=/data/db\", \"--debug-addr=-\", \"--telemetry=disable\", \"--log-level=warn\"]"
[ -x /usr/bin/prometheus ] || die "Debian's prometheus is missing: run scripts/setup.sh test first"
mkdir -p "$work/prometheus"
cp /usr/bin/prometheus "$work/prometheus/"
build "$prefix/prometheus:debian" "$script_hash-$(hash_of /usr/bin/prometheus)" "$work/prometheus" "FROM $debian
COPY prometheus /usr/local/bin/prometheus
RUN mkdir -p /prometheus && chown nobody:nogroup /prometheus
USER nobody
WORKDIR /prometheus
ENTRYPOINT [\"prometheus\", \"--storage.tsdb.path=/prometheus/data\"]"
say "stand-ins ready under $prefix/"
