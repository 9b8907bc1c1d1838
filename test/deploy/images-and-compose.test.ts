import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { LOCATIONS } from '@perfwatch/common';

// What a user gets without the tests' stand-ins: compose-stack.test.ts builds and runs these
// files for real, on local stand-in bases; this checks the defaults a user's `docker build` and
// `docker compose up` take, and what podman-compose does not enforce (health-gated starts).
const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const deploy = join(root, 'deploy');

describe.each(['gateway', 'agent'])('%s image', (name) => {
  const dockerfile = readFileSync(join(deploy, `${name}.Dockerfile`), 'utf8');

  it('builds on the official Node 24 image by default, runs as a non-root user', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
    expect([...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1])).toEqual(['${NODE_IMAGE}', '${NODE_IMAGE}']);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(new RegExp(`^CMD \\["${name}"\\]$`, 'm'));
    // The proxy CA of a build reaches npm as a secret for one step, never a layer.
    expect(dockerfile).toMatch(/RUN --mount=type=secret,id=build_ca,required=false/);
    expect(dockerfile).not.toMatch(/^(COPY|ADD) .*(\.crt|\.pem|npmrc)/m);
  });

  it('labels both stages, so scripts/images.sh can clear the untagged images earlier builds left', () => {
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages).toHaveLength(2);
    for (const stage of stages) expect(stage).toMatch(/^LABEL org\.perfwatch\.build="1"$/m);
    expect(readFileSync(join(root, 'scripts/images.sh'), 'utf8')).toMatch(
      /image prune -f --filter "label=org\.perfwatch\.build" --filter "until=1h"/,
    );
  });
});

describe('docker-compose stack', () => {
  type Service = {
    image?: string;
    build?: { context: string; dockerfile: string };
    environment?: Record<string, string | null>;
    volumes?: string[];
    restart?: string;
    healthcheck?: { test: string[] };
    depends_on?: Record<string, { condition: string }>;
    ports?: string[];
    security_opt?: string[];
    cap_drop?: string[];
    cap_add?: string[];
    user?: string;
  };
  const compose = parse(readFileSync(join(deploy, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, Service>;
  };
  const services = compose.services;

  it('runs NATS, MongoDB, a gateway, agents in two locations and Prometheus, from official images by default', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['nats', 'mongodb', 'gateway', 'prometheus']));
    const locations = Object.values(services)
      .map((s) => s.environment?.['PERFWATCH_LOCATION'])
      .filter(Boolean);
    expect(new Set(locations).size).toBe(2);
    for (const location of locations) expect(LOCATIONS).toContain(location);
    expect(services['nats']!.image).toBe('${PERFWATCH_NATS_IMAGE:-nats:2.11-alpine}');
    expect(services['mongodb']!.image).toBe('${PERFWATCH_MONGO_IMAGE:-mongo:8}');
  });

  it('restarts every service, starts each after the health of what it needs, and keeps NATS off the host', () => {
    for (const [name, service] of Object.entries(services)) {
      expect(service.restart, name).toBe('unless-stopped');
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect(condition, `${name} → ${dependency}`).toBe('service_healthy');
        expect(services[dependency]!.healthcheck, dependency).toBeDefined();
      }
    }
    expect(Object.keys(services['gateway']!.depends_on!).sort()).toEqual(['mongodb', 'nats']);
    expect(services['nats']!.ports).toBeUndefined();
  });

  it("runs agents with the seccomp profile of Chrome's sandbox, and mounts files that exist", () => {
    for (const [name, service] of Object.entries(services)) {
      if (service.environment?.['PERFWATCH_LOCATION'])
        expect(service.security_opt, name).toContain('seccomp=./seccomp/chrome-sandbox.json');
      if (service.build)
        expect(existsSync(join(deploy, service.build.context, service.build.dockerfile)), name).toBe(true);
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('.')) expect(existsSync(join(deploy, source)), `${name}: ${source}`).toBe(true);
      }
    }
    expect(existsSync(join(deploy, 'seccomp/chrome-sandbox.json'))).toBe(true);
  });

  it('runs every service with no capabilities and no-new-privileges, and publishes Prometheus on loopback only', () => {
    for (const [name, service] of Object.entries(services)) {
      expect(service.cap_drop, name).toEqual(['ALL']);
      expect(service.cap_add, name).toBeUndefined();
      expect(service.security_opt, name).toContain('no-new-privileges:true');
    }
    // mongo:8 started as root needs CAP_SETUID and CAP_SETGID to switch to its own user.
    expect(services['mongodb']!.user).toBe('999:999');
    expect(services['prometheus']!.ports).toEqual(['127.0.0.1:${PERFWATCH_PROMETHEUS_PORT:-9090}:9090']);
  });

  it('serves /metrics and /readyz on ops ports that are not published, and checks health and scrapes there', () => {
    const opsPort = (name: string) => {
      const environment = services[name]!.environment ?? {};
      return Number(environment['OPS_PORT'] ?? 9464);
    };
    const scrape = parse(readFileSync(join(deploy, 'prometheus/compose-prometheus.yml'), 'utf8')) as {
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    const targets = scrape.scrape_configs.flatMap((job) => job.static_configs.flatMap((config) => config.targets));
    const programs = Object.keys(services).filter(
      (name) => name === 'gateway' || services[name]!.environment?.['PERFWATCH_LOCATION'],
    );
    expect(programs).toHaveLength(3);
    expect(targets.sort()).toEqual(programs.map((name) => `${name}:${opsPort(name)}`).sort());
    for (const name of programs) {
      const ops = opsPort(name);
      expect(Number.isInteger(ops) && ops > 0, name).toBe(true);
      const published = (services[name]!.ports ?? []).map((port) => Number(port.split(':').at(-1)));
      expect(published, name).not.toContain(ops);
      expect(services[name]!.healthcheck!.test.join(' '), name).toContain(`http://127.0.0.1:${ops}/readyz`);
    }
    // The gateway's API stays on its published port, apart from the ops port.
    expect(services['gateway']!.ports).toEqual(['${PERFWATCH_PORT:-8080}:8080']);
  });
});

describe("the agent's seccomp profile", () => {
  type Rule = { names: string[]; action: string; includes?: Record<string, unknown> };
  const profile = JSON.parse(readFileSync(join(deploy, 'seccomp/chrome-sandbox.json'), 'utf8')) as {
    defaultAction: string;
    defaultErrnoRet?: number;
    archMap?: unknown;
    syscalls: Rule[];
  };
  const allowed = new Set(profile.syscalls.filter((rule) => rule.action === 'SCMP_ACT_ALLOW').flatMap((r) => r.names));
  const measured = readFileSync(join(deploy, 'seccomp/measured-syscalls.txt'), 'utf8')
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => line.split(' ')[0]!);

  it('refuses what it does not list (ENOSYS) and allows every call measured but io_uring, whatever the capabilities', () => {
    expect(profile.defaultAction).toBe('SCMP_ACT_ERRNO');
    expect(profile.defaultErrnoRet).toBe(38);
    expect(measured.length).toBeGreaterThan(100);
    for (const name of measured) if (!name.startsWith('io_uring')) expect(allowed, name).toContain(name);
    expect(allowed).not.toContain('io_uring_setup');
    // A rule that depends on the container's capabilities is dropped under cap_drop ALL; Docker's
    // and podman's profiles allow chroot with CAP_SYS_CHROOT only, and Chrome's sandbox then dies.
    for (const rule of profile.syscalls) expect(rule.includes ?? {}, rule.names.join(' ')).toEqual({});
    expect(allowed).toContain('chroot');
    // Native calls only: nothing in the image runs on a 32-bit ABI.
    expect(profile.archMap).toBeUndefined();
  });

  it('allows none of the calls a container escape leans on that Chrome and Node were not measured to make', () => {
    const unneeded = ['mount', 'umount2', 'pivot_root', 'move_mount', 'open_tree', 'fsopen', 'fsmount', 'fsconfig'];
    unneeded.push('setns', 'ptrace', 'process_vm_readv', 'process_vm_writev', 'keyctl', 'add_key', 'request_key');
    unneeded.push('bpf', 'perf_event_open', 'userfaultfd', 'open_by_handle_at', 'init_module', 'finit_module');
    unneeded.push('kexec_load', 'reboot', 'swapon', 'syslog', 'personality', 'io_uring_enter', 'io_uring_register');
    for (const name of unneeded) {
      expect(measured, name).not.toContain(name);
      expect(allowed, name).not.toContain(name);
    }
  });
});
