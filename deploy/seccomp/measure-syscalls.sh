#!/usr/bin/env bash
# Measures the system calls the agent image makes under a seccomp profile: how
# deploy/seccomp/chrome-sandbox.json was narrowed (docs/operating.md, "The agent's seccomp profile").
#
# The agent image runs as shipped (cap_drop ALL, no-new-privileges, read-only root, /tmp on
# tmpfs, 1 GiB /dev/shm, Chrome in its own sandbox) with podman and runc, and serves a location
# of a gateway on this host; real Lighthouse audits of the demo site's pages, mobile and desktop,
# then a stop by SIGTERM. strace (as root, from the host) follows the container from runc's init
# onwards: only what comes after runc loads the profile counts, so the calls runc itself makes
# before exec are in the count too (they pass the same filter). A health check run by
# `exec` (as compose's is) is traced the same way.
#
#   sudo deploy/seccomp/measure-syscalls.sh PROFILE OUT_DIR [PAGES]
#
# PROFILE  the seccomp profile to run under (JSON, as Docker, podman and the kubelet take it)
# OUT_DIR  gets trace.agent and trace.exec (strace -f), and syscalls.txt: one line a call,
#          "name calls failed errnos", sorted by name
# PAGES    demo-site pages to audit (default "index.html heavy.html huge.html slow.html")
#
# Needs: root, podman, strace, the images of `npm run images` (perfwatch-agent:latest), the
# nats-server that set-up builds (.tools/bin), and Node 24 (node_modules/node/bin).
# A profile whose default action is SCMP_ACT_LOG instead of SCMP_ACT_ERRNO lets everything
# through and has the kernel log each call it does not list (audit type=1326): OUT_DIR/logged.txt
# counts them by name and program, the check that a narrowed profile misses nothing a run makes.
# MEASURE_TRACE=0 runs without strace (faster, and Chrome's timings as usual), for that check.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
profile="$(realpath "$1")"
out="$(realpath -m "$2")"
pages="${3:-index.html heavy.html huge.html slow.html}"
trace="${MEASURE_TRACE:-1}"
say() { printf 'measure-syscalls: %s\n' "$*" >&2; }
export PATH="$root/node_modules/node/bin:$PATH"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$root/scripts/podman-containers.conf}"
mkdir -p "$out"
work="$(mktemp -d)"
name="perfwatch-seccomp-measure-$$"
pids=()
cleanup() {
  podman logs "$name" >"$out/agent.log" 2>&1 || true
  podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
  # Last started first: the gateway stops while NATS still answers. What has not stopped 35 s
  # after SIGTERM (the gateway's shutdown bound is 30 s) is killed.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null || continue
    for _ in $(seq 70); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.5; done
    kill -9 "${pids[i]}" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
nats_port="$(free_port)" site_port="$(free_port)" gateway_port="$(free_port)" ops_port="$(free_port)"

.tools/bin/nats-server -js -sd "$work/js" -a 127.0.0.1 -p "$nats_port" >"$work/nats.log" 2>&1 &
pids+=($!)
node --input-type=module -e "const { startDemoSite } = await import('$root/local/src/demo-site-server.ts');
await startDemoSite({ host: '127.0.0.1', port: $site_port });" >"$work/site.log" 2>&1 &
pids+=($!)

export PERFWATCH_DATA_DIR="$work/data" NATS_URL="nats://127.0.0.1:$nats_port"
token="$(node bin/perfwatch.js admin create-user measure | sed -n 's/^token (shown once, keep it secret): //p')"
for page in $pages; do
  node bin/perfwatch.js admin add-project measure "http://127.0.0.1:$site_port/$page" --locations tokyo --runs 1 >/dev/null
done
PORT="$gateway_port" HOST=127.0.0.1 LOG_LEVEL=warn node bin/perfwatch.js gateway >"$work/gateway.log" 2>&1 &
pids+=($!)

# The container is created and its runc init left waiting before exec (podman init): strace
# attaches to it there, before the profile is loaded, and `podman start` lets it go on.
podman create --name "$name" --network host --cap-drop ALL --security-opt no-new-privileges:true \
  --security-opt "seccomp=$profile" --read-only --tmpfs /tmp --shm-size 1g \
  -e "NATS_URL=$NATS_URL" -e PERFWATCH_LOCATION=tokyo -e PERFWATCH_AGENT_ID=seccomp-measure \
  -e PERFWATCH_ALLOW_TARGETS=127.0.0.1/32 -e "OPS_PORT=$ops_port" -e OPS_HOST=127.0.0.1 \
  perfwatch-agent:latest >/dev/null
podman init "$name" >/dev/null
init_pid="$(podman inspect -f '{{.State.Pid}}' "$name")"
# runc loads the profile before it waits to exec: the process strace attaches to has it already.
grep -q '^Seccomp:[[:space:]]*2' "/proc/$init_pid/status" || { say "runc loaded no filter before exec"; exit 1; }
logged_from="$(dmesg | wc -l)"
strace_pid=
if [ "$trace" = 1 ]; then
  strace -f -qq -s 0 --decode-pids=pidns -o "$out/trace.agent" -p "$init_pid" &
  strace_pid=$!
  sleep 1
fi
podman start "$name" >/dev/null

ready() { curl -sf "http://127.0.0.1:$ops_port/readyz" >/dev/null; }
for _ in $(seq 600); do ready && break; sleep 0.5; done
ready || { say "the agent never became ready"; podman logs "$name" | tail -20 >&2; exit 1; }
sleep 2 # its first announcement
# The compose health check, run by exec as compose runs it.
health=(podman exec "$name" node -e
  "fetch('http://127.0.0.1:$ops_port/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))")
if [ "$trace" = 1 ]; then strace -f -qq -s 0 --decode-pids=pidns -o "$out/trace.exec" "${health[@]}"; else "${health[@]}"; fi

for page in $pages; do
  for device in mobile desktop; do
    url="http://127.0.0.1:$site_port/$page"
    code="$(curl -s -o "$work/reply.json" -w '%{http_code}' -H "Authorization: $token" -G \
      --data-urlencode "url=$url" --data-urlencode "device=$device" "http://127.0.0.1:$gateway_port/v1/update")"
    # A failed update still ran Chrome and Lighthouse: said, and the measure goes on.
    say "$page $device: HTTP $code"
    [ "$code" = 200 ] || { head -c 600 "$work/reply.json" >&2; echo >&2; }
  done
done
podman stop -t 30 "$name" >/dev/null
[ -z "$strace_pid" ] || wait "$strace_pid" || true

# Calls the profile did not list, as the kernel logged them (a profile whose default is SCMP_ACT_LOG).
table=/usr/include/x86_64-linux-gnu/asm/unistd_64.h
dmesg | tail -n +"$((logged_from + 1))" | { grep 'type=1326' || true; } \
  | sed -n 's/.*comm="\([^"]*\)".* syscall=\([0-9]*\).*/\2 \1/p' | sort | uniq -c \
  | while read -r count number comm; do
      called="$( [ -r "$table" ] && sed -n "s/^#define __NR_\([a-z0-9_]*\) $number\$/\1/p" "$table")"
      echo "${called:-$number} $count $comm"
    done >"$out/logged.txt"
say "$(wc -l <"$out/logged.txt") kinds of unlisted calls logged; $out/logged.txt"
[ "$trace" = 1 ] || exit 0

# Calls made under the profile, by name: how many, how many failed, and with which errors. A call
# counts when the thread making it has the filter: the container's first process had it when
# strace attached (runc loads it before waiting to exec); the health check's runc init loads it
# in the trace (prctl(PR_SET_SECCOMP) or seccomp()); and a thread or process a filtered thread
# starts has it from its start (strace may print a child's first calls before its parent's clone).
node - "$out" "$init_pid" <<'EOF'
const { readFileSync, writeFileSync } = require('node:fs');
const [out, initPid] = process.argv.slice(2);
const calls = new Map();
for (const [file, first] of [['trace.agent', initPid], ['trace.exec', undefined]]) {
  const lines = readFileSync(`${out}/${file}`, 'utf8').split('\n');
  const since = new Map(first ? [[first, 0]] : []); // thread id -> line it has the filter from
  const clones = []; // [parent, child, line]
  lines.forEach((line, index) => {
    const match = /^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()/.exec(line);
    if (!match) return;
    const name = match[2] ?? match[3];
    // A child's id as strace sees it (the container's own PID namespace numbers it differently).
    const child = / = (\d+)(?: \/\* (\d+) in strace's PID NS \*\/)?$/.exec(line);
    if (/^(clone|clone3|fork|vfork)$/.test(name) && child) clones.push([match[1], child[2] ?? child[1], index]);
    if (!since.has(match[1]) && / (prctl\(PR_SET_SECCOMP, SECCOMP_MODE_FILTER|seccomp\(SECCOMP_SET_MODE_FILTER, .*), \{len=/.test(line))
      since.set(match[1], index + 1);
  });
  if (since.size === 0) throw new Error(`${file}: no seccomp filter load seen`);
  for (let grown = true; grown; ) {
    grown = false;
    for (const [parent, child, index] of clones)
      if (!since.has(child) && since.has(parent) && since.get(parent) <= index) {
        since.set(child, 0);
        grown = true;
      }
  }
  lines.forEach((line, index) => {
    const match = /^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()/.exec(line);
    if (!match || !(since.get(match[1]) <= index) || line.includes('<unfinished ...>')) return; // counted where it resumes
    const name = match[2] ?? match[3];
    const entry = calls.get(name) ?? { calls: 0, failed: 0, errors: new Set() };
    entry.calls++;
    const error = / = -1 (E[A-Z0-9]+)/.exec(line);
    if (error) {
      entry.failed++;
      entry.errors.add(error[1]);
    }
    calls.set(name, entry);
  });
}
const summary = [...calls]
  .sort(([a], [b]) => a.localeCompare(b))
  .map(([name, { calls, failed, errors }]) => `${name} ${calls} ${failed} ${[...errors].join(',') || '-'}`);
writeFileSync(`${out}/syscalls.txt`, `${summary.join('\n')}\n`);
console.log(`${calls.size} system calls made; ${out}/syscalls.txt`);
EOF
