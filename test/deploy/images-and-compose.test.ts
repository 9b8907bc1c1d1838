import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { LOCATIONS } from '@perfwatch/common';

// No Docker engine here to build the images or run the compose stack, so this checks what can
// be checked without one: every file they copy or mount exists, the images run as non-root on
// Node 24, and the stack has the parts the README promises.
const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const deploy = join(root, 'deploy');

describe.each(['gateway', 'agent'])('%s image', (name) => {
  const dockerfile = readFileSync(join(deploy, `${name}.Dockerfile`), 'utf8');

  it('copies only what exists, runs on Node 24 as a non-root user', () => {
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect(existsSync(join(root, source)), source).toBe(true);
    expect([...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1])).toEqual(['node:24-bookworm-slim', 'node:24-bookworm-slim']);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(new RegExp(`^CMD \\["${name}"\\]$`, 'm'));
  });
});

describe('docker-compose stack', () => {
  const compose = parse(readFileSync(join(deploy, 'docker-compose.yml'), 'utf8')) as { services: Record<string, { build?: { context: string; dockerfile: string }; environment?: Record<string, string>; volumes?: string[] }> };

  it('runs NATS, MongoDB, a gateway, agents in two locations and Prometheus', () => {
    const services = compose.services;
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['nats', 'mongodb', 'gateway', 'prometheus']));
    const locations = Object.values(services).map((s) => s.environment?.['PERFWATCH_LOCATION']).filter(Boolean);
    expect(new Set(locations).size).toBe(2);
    for (const location of locations) expect(LOCATIONS).toContain(location);
  });

  it('builds from Dockerfiles and mounts files that exist', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.build) expect(existsSync(join(deploy, service.build.context, service.build.dockerfile)), name).toBe(true);
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('.')) expect(existsSync(join(deploy, source)), `${name}: ${source}`).toBe(true);
      }
    }
  });
});
