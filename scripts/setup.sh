#!/usr/bin/env bash
# Installs what perfwatch needs to run and to test, and only what is missing:
#   - npm packages (npm ci), Node 24 among them (the npm package node@24);
#   - Debian's chromium, for the agent's Lighthouse runs;
#   - for tests and benchmarks: nats-server (current, with JetStream) and FerretDB v1 (a
#     MongoDB-wire server), both built from the Go module proxy into .tools/bin
#     (`perfwatch start` needs neither: it runs an in-process bus and an embedded store);
#   - for benchmarks only: Unlighthouse (@unlighthouse/cli, pinned), the peer bench/site-scan.ts
#     measures perfwatch against, installed into .tools/unlighthouse (its own tree: it brings
#     puppeteer and a Lighthouse of its own, which the project's lockfile need not carry);
#   - for tests only: Gitea (an API-only build, with SQLite, from the Go module proxy: the forge
#     the reports to a pull request are tested against; Debian's gcc builds it, Debian's git
#     serves its repositories), kustomize (built the same way) and Debian's prometheus (server and
#     promtool), which check the deploy/ manifests, alert rules and real scrapes; SeaweedFS (built
#     the same way: `weed`, the S3 server the artifact store is tested against); podman,
#     podman-compose and mmdebstrap (Debian), which build and run the shipped images; and
#     schemathesis (from PyPI, in a virtualenv under .tools), which fuzzes the API from its
#     OpenAPI document.
# Built binaries are also kept in ~/.cache/perfwatch, so a fresh clone builds them only once.
# Usage: scripts/setup.sh [test|bench|start]   (start installs only npm packages and Chromium)
set -euo pipefail

NATS_SERVER_VERSION=v2.15.2
FERRETDB_VERSION=v1.24.2
KUSTOMIZE_VERSION=v5.8.0
GITEA_VERSION=v1.24.6
SCHEMATHESIS_VERSION=4.32.5
UNLIGHTHOUSE_VERSION=0.18.1
# SeaweedFS publishes no module versions: a pseudo-version of its main branch (release 4.53).
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
purpose="${1:-test}"
tools="$root/.tools/bin"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/perfwatch/bin"
mkdir -p "$tools" "$cache"

say() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else return 1
  fi
}

# 1. npm packages, when the lockfile changed since the last install.
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -x node_modules/node/bin/node ] || [ "$(cat node_modules/.perfwatch-lock 2>/dev/null)" != "$lock_hash" ]; then
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
  echo "$lock_hash" > node_modules/.perfwatch-lock
fi

# 2. Debian packages: Chromium always; Prometheus and promtool for the tests.
apt_updated=
apt_install() { # packages...
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq && apt_updated=1 || return 1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
chrome="${CHROME_PATH:-/usr/bin/chromium}"
if [ ! -x "$chrome" ]; then
  say "installing Debian's chromium"
  apt_install chromium fonts-liberation ||
    die "Chromium is missing at $chrome and could not be installed: run 'sudo apt-get install chromium' (or set CHROME_PATH) and try again"
fi
if [ "$purpose" = test ] && { [ ! -x /usr/bin/prometheus ] || [ ! -x /usr/bin/promtool ]; }; then
  say "installing Debian's prometheus (server and promtool, for the operations tests)"
  # The package's service is never started here: the tests run their own server on loopback.
  apt_install prometheus || die "could not install Debian's prometheus: run 'sudo apt-get install prometheus' and try again"
fi

# strace, for the test that watches the embedded store sync its WAL at every commit
# (test/integration/sqlite-durability.test.ts).
if [ "$purpose" = test ] && ! command -v strace >/dev/null 2>&1; then
  say "installing Debian's strace (the embedded store's durability test watches its syncs)"
  apt_install strace || die "could not install Debian's strace: run 'sudo apt-get install strace' and try again"
fi

# stress-ng, for the benches and scripts that take a core away to show a slower machine
# (bench/verdicts.ts, scripts/test-under-load.sh).
if [ "$purpose" != start ] && ! command -v stress-ng >/dev/null 2>&1; then
  say "installing Debian's stress-ng (a competing load for the verdict bench and test-under-load)"
  apt_install stress-ng || die "could not install Debian's stress-ng: run 'sudo apt-get install stress-ng' and try again"
fi

# Containers, for the tests that build and run the shipped images and compose file: podman
# (runc, CNI with DNS between containers, podman-compose) unless a Docker engine answers, and
# mmdebstrap for the stand-in base images (scripts/standin-images.sh).
if [ "$purpose" = test ]; then
  container_packages=(mmdebstrap)
  if ! { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }; then
    container_packages+=(podman runc podman-compose golang-github-containernetworking-plugin-dnsname)
  fi
  missing=()
  for package in "${container_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]} (to build and run the shipped images in the tests)"
    apt_install "${missing[@]}" || die "could not install ${missing[*]}: run 'sudo apt-get install ${missing[*]}' and try again"
  fi
fi

# 3. Go-built servers.
build_go_tool() { # name module version package-dir-within-module
  local name="$1" module="$2" version="$3" pkg="$4"
  local stamp="$name@$version"
  if [ -x "$tools/$name" ] && [ "$(cat "$tools/$name.version" 2>/dev/null)" = "$stamp" ]; then return; fi
  if [ -x "$cache/$name-$version" ]; then
    cp "$cache/$name-$version" "$tools/$name"
  else
    command -v go >/dev/null 2>&1 || die "Go is needed to build $name ($purpose): install Go 1.24 or newer"
    say "building $name $version from the Go module proxy (once; a minute or two)"
    local dir work
    local info
    info="$(GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "$module@$version" || true)"
    dir="$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [ -n "$dir" ] && [ -d "$dir" ] || die "could not download $module@$version: $(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",$/\1/p')"
    # Built from a writable copy of the module, as its own main module: FerretDB embeds its
    # version from build/version/version.txt, which only a release build writes.
    work="$(mktemp -d)"
    cp -r "$dir/." "$work/"
    chmod -R u+w "$work"
    if [ "$name" = ferretdb ]; then echo "$version" > "$work/build/version/version.txt"; fi
    (cd "$work" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$cache/$name-$version.tmp" "./$pkg")
    mv "$cache/$name-$version.tmp" "$cache/$name-$version"
    rm -rf "$work"
    cp "$cache/$name-$version" "$tools/$name"
  fi
  echo "$stamp" > "$tools/$name.version"
}
# Gitea, for the tests of reports to a forge. Built with cgo for SQLite and without the
# `bindata` tag: no web assets in the binary, so it reads its locales (options/) and mail and
# page templates (templates/) from its static root, the copies kept beside it. The whole
# directory is cached per version and .tools/gitea points at it (test/support/gitea.ts).
build_gitea() {
  local home
  home="$(dirname "$cache")/gitea-$GITEA_VERSION"
  if [ ! -x "$home/gitea" ]; then
    say "building Gitea $GITEA_VERSION from the Go module proxy (once; a few minutes)"
    local info dir work
    info="$(GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "code.gitea.io/gitea@$GITEA_VERSION" || true)"
    dir="$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    if [ -z "$dir" ] || [ ! -d "$dir" ]; then
      say "could not download code.gitea.io/gitea@$GITEA_VERSION: $(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",$/\1/p')"
      return 1
    fi
    work="$(mktemp -d)"
    cp -r "$dir/." "$work/"
    chmod -R u+w "$work"
    rm -rf "$home.tmp"
    mkdir -p "$home.tmp"
    (cd "$work" && GOTOOLCHAIN=local CGO_ENABLED=1 GOFLAGS=-mod=mod go build -tags 'sqlite sqlite_unlock_notify' \
      -trimpath -ldflags "-s -w -X \"main.MakeVersion=${GITEA_VERSION#v}\" -X \"main.Version=${GITEA_VERSION#v}\"" \
      -o "$home.tmp/gitea" .) || { rm -rf "$work" "$home.tmp"; return 1; }
    cp -r "$work/options" "$work/templates" "$home.tmp/"
    rm -rf "$work" "$home"
    mv "$home.tmp" "$home"
  fi
  ln -sfn "$home" "$root/.tools/gitea"
}
gitea_pid=
if [ "$purpose" = test ]; then
  gitea_missing=()
  command -v git >/dev/null 2>&1 || gitea_missing+=(git)
  if [ ! -x "$(dirname "$cache")/gitea-$GITEA_VERSION/gitea" ]; then
    command -v go >/dev/null 2>&1 || die "Go is needed to build Gitea (test): install Go 1.24 or newer"
    command -v gcc >/dev/null 2>&1 || gitea_missing+=(gcc libc6-dev)
  fi
  if [ "${#gitea_missing[@]}" -gt 0 ]; then
    say "installing Debian's ${gitea_missing[*]} (Gitea is built with cgo and serves its repositories with git)"
    apt_install "${gitea_missing[@]}" || die "could not install ${gitea_missing[*]}: run 'sudo apt-get install ${gitea_missing[*]}' and try again"
  fi
  build_gitea &
  gitea_pid=$!
fi
nats_pid=
ferret_pid=
if [ "$purpose" != start ]; then
  build_go_tool nats-server github.com/nats-io/nats-server/v2 "$NATS_SERVER_VERSION" . &
  nats_pid=$!
  build_go_tool ferretdb github.com/FerretDB/FerretDB "$FERRETDB_VERSION" cmd/ferretdb &
  ferret_pid=$!
fi
kustomize_pid=
weed_pid=
if [ "$purpose" = test ]; then
  build_go_tool kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION" . &
  kustomize_pid=$!
  # The largest of them (about 220 MB; several minutes on two cores), built once into the cache.
  build_go_tool weed github.com/seaweedfs/seaweedfs "$SEAWEEDFS_VERSION" weed &
  weed_pid=$!
fi
if [ -n "$nats_pid" ]; then wait "$nats_pid" || die "building nats-server failed"; fi
if [ -n "$ferret_pid" ]; then wait "$ferret_pid" || die "building FerretDB failed"; fi
if [ -n "$kustomize_pid" ]; then wait "$kustomize_pid" || die "building kustomize failed"; fi
if [ -n "$weed_pid" ]; then wait "$weed_pid" || die "building SeaweedFS (github.com/seaweedfs/seaweedfs, weed) failed"; fi
if [ -n "$gitea_pid" ]; then
  wait "$gitea_pid" ||
    die "building Gitea $GITEA_VERSION (code.gitea.io/gitea, with cgo and gcc) failed: see the go output above; it needs Go 1.24 or newer, gcc and the Go module proxy"
fi

# 4. schemathesis, for the tests: pinned, in a virtualenv of its own.
if [ "$purpose" = test ]; then
  venv="$root/.tools/schemathesis"
  if [ "$(cat "$venv/.version" 2>/dev/null)" != "$SCHEMATHESIS_VERSION" ]; then
    say "installing schemathesis $SCHEMATHESIS_VERSION from PyPI (once)"
    command -v python3 >/dev/null 2>&1 || apt_install python3 || die "python3 is needed for schemathesis: run 'sudo apt-get install python3 python3-venv'"
    rm -rf "$venv"
    python3 -m venv "$venv" 2>/dev/null || { apt_install python3-venv && python3 -m venv "$venv"; } ||
      die "could not create a Python virtualenv: run 'sudo apt-get install python3-venv' and try again"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" || die "could not install schemathesis from PyPI"
    echo "$SCHEMATHESIS_VERSION" > "$venv/.version"
  fi
fi

# 5. Unlighthouse, for the site-scan bench: pinned, in a package tree of its own, pointed at
# Debian's Chromium (no browser download).
if [ "$purpose" = bench ]; then
  peer="$root/.tools/unlighthouse"
  if [ "$(cat "$peer/.version" 2>/dev/null)" != "$UNLIGHTHOUSE_VERSION" ]; then
    say "installing @unlighthouse/cli $UNLIGHTHOUSE_VERSION from npm (once, for bench/site-scan.ts)"
    rm -rf "$peer" && mkdir -p "$peer"
    echo '{"private":true}' > "$peer/package.json"
    PUPPETEER_SKIP_DOWNLOAD=1 npm install --prefix "$peer" --no-audit --no-fund --silent \
      "@unlighthouse/cli@$UNLIGHTHOUSE_VERSION" || die "could not install @unlighthouse/cli $UNLIGHTHOUSE_VERSION from npm"
    echo "$UNLIGHTHOUSE_VERSION" > "$peer/.version"
  fi
fi
