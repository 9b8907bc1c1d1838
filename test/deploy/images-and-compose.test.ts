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
        expect(service.security_opt, name).toEqual(['seccomp=./seccomp/chrome-sandbox.json']);
      if (service.build)
        expect(existsSync(join(deploy, service.build.context, service.build.dockerfile)), name).toBe(true);
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('.')) expect(existsSync(join(deploy, source)), `${name}: ${source}`).toBe(true);
      }
    }
    expect(existsSync(join(deploy, 'seccomp/chrome-sandbox.json'))).toBe(true);
  });
});
