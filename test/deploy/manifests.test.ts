import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { LOCATIONS } from '@perfwatch/common';
import { loadGatewayConfig } from '@perfwatch/gateway';
import { loadAgentConfig } from '../../agent/src/config.ts';
import { artifactStoreFromSettings } from '../../gateway/src/artifacts/store/artifact-store-from-settings.ts';

// Every kustomize overlay under deploy/k8s builds with a real kustomize, and every object it
// renders validates against the Kubernetes (and Prometheus Operator) JSON schemas shipped in
// the npm package kubernetes-models: offline, nothing fetched.

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const kustomize = join(root, '.tools/bin/kustomize');
const overlays = join(root, 'deploy/k8s/overlays');
const run = promisify(execFile);

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

async function build(dir: string): Promise<K8sObject[]> {
  const { stdout } = await run(kustomize, ['build', dir], { maxBuffer: 16 * 1024 * 1024 });
  return parseAllDocuments(stdout).map((doc) => doc.toJS() as K8sObject);
}

/** The kubernetes-models class for an object's apiVersion and kind; unknown kinds fail the test. */
async function validate(object: K8sObject): Promise<void> {
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : ['', object.apiVersion];
  const module =
    group === 'monitoring.coreos.com'
      ? `@kubernetes-models/prometheus-operator/${group}/${version}/${object.kind}`
      : `kubernetes-models/${group ? `${group}/` : ''}${version}/${object.kind}`;
  const exports = (await import(module)) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = exports[object.kind];
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  new Model(object).validate();
}

const overlayNames = readdirSync(overlays).sort();

describe('Kubernetes manifests', () => {
  it('has an agent overlay for every location, and one for the gateway', () => {
    expect(overlayNames).toEqual([...LOCATIONS.map((l) => `agent-${l.replaceAll('_', '-')}`), 'gateway'].sort());
  });

  it.each(overlayNames)('overlay %s builds, and every object validates against its schema', async (name) => {
    const objects = await build(join(overlays, name));
    expect(objects.length).toBeGreaterThan(0);
    for (const object of objects)
      await expect(validate(object), `${object.kind} ${object.metadata.name}`).resolves.toBeUndefined();
  });

  it.each(overlayNames)(
    "overlay %s: every NetworkPolicy rule names its peer, and agents' ops port admits the monitoring namespace only",
    async (name) => {
      type Rule = { from?: unknown[]; to?: unknown[] };
      const policies = (await build(join(overlays, name))).filter((o) => o.kind === 'NetworkPolicy') as Array<
        K8sObject & { spec: { ingress?: Rule[]; egress?: Rule[] } }
      >;
      expect(policies).toHaveLength(1);
      const policy = policies[0]!;
      for (const rule of policy.spec.egress ?? []) expect(rule.to?.length, JSON.stringify(rule)).toBeGreaterThan(0);
      if (name.startsWith('agent-')) {
        expect(policy.spec.ingress).toEqual([
          {
            from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
            ports: [{ port: 9464, protocol: 'TCP' }],
          },
        ]);
      }
    },
  );

  it.each(overlayNames)(
    'overlay %s: probes and the Prometheus Operator reach the ops port, which no Service carries and only monitoring reaches',
    async (name) => {
      const objects = await build(join(overlays, name));
      const { ops, pub } = portsOf(name, objects.find((o) => o.kind === 'ConfigMap')!.data!);
      const pod = (
        objects.find((o) => o.kind === 'Deployment') as K8sObject & { spec: { template: { spec: PodSpec } } }
      ).spec.template.spec;
      const container = pod.containers[0]!;
      const number = (port: string | number) =>
        typeof port === 'number' ? port : container.ports.find((p) => p.name === port)?.containerPort;
      expect(container.ports.map((p) => p.containerPort)).toContain(ops);
      if (pub !== undefined) expect(container.ports.map((p) => p.containerPort)).toContain(pub);
      const probes = [container.readinessProbe, container.livenessProbe, container.startupProbe].filter(Boolean);
      expect(probes.length).toBeGreaterThan(0);
      for (const probe of probes) expect(number(probe!.httpGet.port), JSON.stringify(probe)).toBe(ops);

      const services = objects.filter((o) => o.kind === 'Service') as Array<
        K8sObject & { spec: { ports: Array<{ name?: string; port: number; targetPort?: string | number }> } }
      >;
      for (const service of services)
        for (const port of service.spec.ports)
          expect(number(port.targetPort ?? port.port), service.metadata.name).not.toBe(ops);
      // A PodMonitor names a container port; a ServiceMonitor a Service's port, which targets one.
      const monitors = objects.filter((o) => o.kind === 'PodMonitor' || o.kind === 'ServiceMonitor') as Array<
        K8sObject & { spec: { podMetricsEndpoints?: Array<{ port: string }>; endpoints?: Array<{ port: string }> } }
      >;
      expect(monitors).toHaveLength(1);
      const scraped = monitors.flatMap((monitor) =>
        monitor.kind === 'PodMonitor'
          ? monitor.spec.podMetricsEndpoints!.map((endpoint) => number(endpoint.port))
          : monitor.spec.endpoints!.map((endpoint) => {
              const port = services.flatMap((service) => service.spec.ports).find((p) => p.name === endpoint.port);
              return port && number(port.targetPort ?? port.port);
            }),
      );
      expect(scraped.length).toBeGreaterThan(0);
      for (const port of scraped) expect(port).toBe(ops);

      const policy = objects.find((o) => o.kind === 'NetworkPolicy') as K8sObject & {
        spec: { ingress: Array<{ from?: unknown[]; ports?: Array<{ port: number }> }> };
      };
      const toOps = policy.spec.ingress.filter((rule) => !rule.ports || rule.ports.some((p) => p.port === ops));
      expect(toOps).toEqual([
        {
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
          ports: [{ port: ops, protocol: 'TCP' }],
        },
      ]);
    },
  );

  it("deploy/prometheus/prometheus.yml scrapes each job's ops port only", () => {
    const config = parse(readFileSync(join(root, 'deploy/prometheus/prometheus.yml'), 'utf8')) as {
      scrape_configs: Array<{ job_name: string; relabel_configs: Array<Record<string, unknown>> }>;
    };
    expect(config.scrape_configs.map((job) => job.job_name).sort()).toEqual(['perfwatch-agent', 'perfwatch-gateway']);
    for (const job of config.scrape_configs)
      expect(
        job.relabel_configs.filter((rule) =>
          (rule['source_labels'] as string[]).includes('__meta_kubernetes_pod_container_port_name'),
        ),
        job.job_name,
      ).toEqual([{ source_labels: ['__meta_kubernetes_pod_container_port_name'], regex: 'ops', action: 'keep' }]);
  });

  it.each(overlayNames)(
    'overlay %s runs as non-root with no capabilities, no privilege escalation, a seccomp profile and a read-only root',
    async (name) => {
      const pod = (
        (await build(join(overlays, name))).find((o) => o.kind === 'Deployment') as K8sObject & {
          spec: { template: { spec: PodSpec } };
        }
      ).spec.template.spec;
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(pod.securityContext.seccompProfile).toMatchObject({
        type: expect.stringMatching(/^(RuntimeDefault|Localhost)$/),
      });
      expect(pod.automountServiceAccountToken).toBe(false);
      for (const container of [...pod.containers, ...(pod.initContainers ?? [])])
        expect(container.securityContext, container.name).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
    },
  );

  it.each(overlayNames)(
    'overlay %s reaches NATS over TLS with an nkey seed and a CA from a Secret of its own',
    async (name) => {
      const objects = await build(join(overlays, name));
      const config = objects.find((o) => o.kind === 'ConfigMap')!.data!;
      expect(config['NATS_URL']).toMatch(/^tls:\/\//);
      const pod = (
        objects.find((o) => o.kind === 'Deployment') as K8sObject & { spec: { template: { spec: PodSpec } } }
      ).spec.template.spec;
      const mounts = pod.containers[0]!.volumeMounts as Array<{ name: string; mountPath: string; readOnly?: boolean }>;
      for (const file of [config['NATS_NKEY_SEED_FILE'], config['NATS_TLS_CA_FILE']]) {
        const mount = mounts.find((m) => file?.startsWith(`${m.mountPath}/`));
        expect(mount, `${file} is on no volume`).toBeDefined();
        expect(mount!.readOnly).toBe(true);
        const volume = pod.volumes.find((v) => v.name === mount!.name) as {
          secret?: { secretName: string; defaultMode: number };
        };
        expect(volume.secret?.defaultMode).toBe(0o440);
        const location = name.replace(/^agent-/, '');
        expect(volume.secret?.secretName).toBe(
          name === 'gateway' ? 'perfwatch-gateway-nats' : `perfwatch-agent-nats-${location}`,
        );
      }
    },
  );

  it("the gateway's ConfigMap is a configuration the gateway takes, trusting the ingress for client addresses", async () => {
    const config = (await build(join(overlays, 'gateway'))).find((o) => o.kind === 'ConfigMap')!.data!;
    const parsed = loadGatewayConfig(config);
    expect(parsed.TRUST_PROXY).toBe('loopback, linklocal, uniquelocal');
    // Artifacts in a bucket: replicas share no disk, and their root filesystem is read-only.
    expect(artifactStoreFromSettings(parsed).where).toBe('S3 bucket perfwatch-artifacts');
    expect(parsed.NATS_URL).toBe(config['NATS_URL']);
  });

  it('a schema violation is caught (the check can fail)', async () => {
    const [deployment] = (await build(join(overlays, 'gateway'))).filter((o) => o.kind === 'Deployment');
    const broken = structuredClone(deployment!) as K8sObject & { spec: { replicas: unknown } };
    broken.spec.replicas = 'two';
    await expect(validate(broken)).rejects.toThrow(/replicas/);
  });

  it.each(LOCATIONS)(
    'the %s agents serve their location, sized for one Chrome, stopping after their longest run',
    async (location) => {
      const objects = await build(join(overlays, `agent-${location.replaceAll('_', '-')}`));
      const config = objects.find((o) => o.kind === 'ConfigMap')!;
      expect(config.data!['PERFWATCH_LOCATION']).toBe(location);
      const deployment = objects.find((o) => o.kind === 'Deployment') as K8sObject & {
        spec: { selector: { matchLabels: Record<string, string> }; template: { spec: PodSpec } };
      };
      expect(deployment.spec.selector.matchLabels['perfwatch.dev/location']).toBe(location);
      const pod = deployment.spec.template.spec;
      const container = pod.containers[0]!;
      expect(container.envFrom[0]!.configMapRef.name).toBe(config.metadata.name);
      expect(container.resources.requests).toEqual(container.resources.limits);
      expect(pod.volumes.find((v) => v.name === 'dshm')!.emptyDir).toMatchObject({ medium: 'Memory' });
      expect(container.volumeMounts).toContainEqual({ name: 'dshm', mountPath: '/dev/shm' });
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(120);
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      // Chrome keeps its own sandbox: the shipped seccomp profile, not --no-sandbox.
      expect(pod.securityContext.seccompProfile).toEqual({
        type: 'Localhost',
        localhostProfile: 'profiles/perfwatch-chrome-sandbox.json',
      });
      expect(existsSync(join(root, 'deploy/seccomp/chrome-sandbox.json'))).toBe(true);
      expect(config.data!['CHROME_NO_SANDBOX']).toBeUndefined();
      expect(container.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      const monitor = objects.find((o) => o.kind === 'PodMonitor') as K8sObject & {
        spec: { selector: { matchLabels: Record<string, string> } };
      };
      expect(monitor.spec.selector.matchLabels['perfwatch.dev/location']).toBe(location);
    },
  );
});

/**
 * The port a program serves /metrics and /readyz on (ops) and its public one (the gateway's
 * PORT), as the program reads them from its ConfigMap: OPS_PORT (unset on the agent: its default,
 * 9464, which its image does not override).
 */
function portsOf(overlay: string, config: Record<string, string>): { ops: number; pub?: number } {
  if (overlay !== 'gateway') return { ops: loadAgentConfig(config, false).OPS_PORT };
  const gateway = loadGatewayConfig(config);
  if (gateway.OPS_PORT === undefined) throw new Error('the gateway ConfigMap sets no OPS_PORT: /metrics is public');
  expect(gateway.OPS_PORT).not.toBe(gateway.PORT);
  return { ops: gateway.OPS_PORT, pub: gateway.PORT };
}

interface Probe {
  httpGet: { path: string; port: string | number };
}

interface Container {
  name: string;
  envFrom: Array<{ configMapRef: { name: string } }>;
  resources: { requests: unknown; limits: unknown };
  volumeMounts: unknown[];
  securityContext: unknown;
  ports: Array<{ name?: string; containerPort: number }>;
  readinessProbe: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
}

interface PodSpec {
  terminationGracePeriodSeconds: number;
  automountServiceAccountToken?: boolean;
  securityContext: { runAsNonRoot: boolean; seccompProfile: unknown };
  volumes: Array<{ name: string; emptyDir?: Record<string, unknown> }>;
  containers: Container[];
  initContainers?: Container[];
}
