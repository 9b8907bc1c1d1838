import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  auditResultSchema,
  overviewResponseSchema,
  webhookPayloadSchema,
  type LocationResult,
} from '@perfwatch/common';
import { freePort } from '../support/local-servers.ts';
import { CART_FLOW } from '../support/lhr-fixtures.ts';
import { runPerfwatch, spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { send, type Reply } from '../support/api-requests.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Issue 36's user flows with real parts: a gateway on nats-server and the MongoDB-wire server, a
// `perfwatch agent` process running real Chromium and Lighthouse's flow API, and the fixture
// site's product page, whose "Add to cart" handler holds the main thread for ?work=MS. A flow
// (navigate, a timespan clicking "Add to cart", a snapshot of the cart) is the project's; its
// lab INP is measured, follows the handler's cost, is held to a step budget by the CLI and by
// the server's alerts (a signed webhook), and a step that cannot be taken is named.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agent: PerfwatchProcess;
let token: string;
let receiver: Server;
const received: string[] = [];
const cart = (work: number) => `${inject('siteUrl')}cart.html?work=${work}`;
/** Fast and slow handlers: 40 ms and 320 ms of main-thread work per click. */
const FAST = 40;
const SLOW = 320;

const SHOP_FLOW = CART_FLOW;

const api = (path: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', params: Record<string, unknown>) =>
  send(
    gateway.url,
    path,
    method,
    method === 'GET' || method === 'DELETE' ? { query: params as Record<string, string> } : { body: params },
    { Authorization: token },
  );

const ok = (reply: Reply): unknown => {
  expect(reply.status, JSON.stringify(reply.body).slice(0, 600)).toBe(200);
  return reply.body;
};

beforeAll(async () => {
  nats = await isolatedNats();
  const receiverPort = await freePort();
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(receiverPort, '127.0.0.1', resolve));
  gateway = await startTestGateway({
    natsUrl: nats.url,
    runTimeoutMs: 120_000,
    replyTimeoutMs: 600_000,
    config: {
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      MAX_RETESTS: 0,
      WEBHOOK_POLL_MS: 200,
    },
  });
  agent = spawnPerfwatch(['agent'], {
    NATS_URL: nats.url,
    PERFWATCH_LOCATION: 'london',
    PERFWATCH_AGENT_ID: 'london-flows',
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  });
  await agent.waitFor(/agent serving location/);
  token = (await gateway.admin.createUser('shop')).token;
  for (const work of [FAST, SLOW])
    await gateway.admin.addProject('shop', cart(work), { locations: ['london'], runs: 1 });
  const added = await api('webhooks', 'POST', {
    targetUrl: `http://127.0.0.1:${receiverPort}/perfwatch`,
    project: cart(SLOW),
  });
  ok(added);
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await gateway?.stop();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  await nats?.dispose();
});

/** A sync desktop update's London cell. */
async function updated(url: string): Promise<LocationResult> {
  const result = auditResultSchema.parse(ok(await api('update', 'GET', { url, device: 'desktop' })));
  return result.desktop!.london!;
}

const stepInp = (cell: LocationResult, name = 'add to cart') => {
  const step = cell.steps!.find((s) => s.name === name)!;
  return step.runs[step.median - 1]!.inp;
};

describe('user flows', () => {
  it('stores a flow as the project, and refuses bad ones naming the step', async () => {
    for (const work of [FAST, SLOW]) {
      const set = ok(await api('projects/flow', 'PUT', { url: cart(work), flow: SHOP_FLOW })) as { flow: unknown };
      expect(set.flow).toEqual(SHOP_FLOW);
    }
    expect((ok(await api('projects/flow', 'GET', { url: cart(FAST) })) as { flow: unknown }).flow).toEqual(SHOP_FLOW);
    const refused = async (flow: unknown, message: RegExp) => {
      const reply = await api('projects/flow', 'PUT', { url: cart(FAST), flow });
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect((reply.body as { errors: string[] }).errors.join('\n')).toMatch(message);
    };
    const withAction = (action: unknown) => ({
      steps: [SHOP_FLOW.steps[0], { kind: 'timespan', name: 'add to cart', actions: [action] }],
    });
    await refused(
      withAction({ action: 'hover', text: 'Add to cart' }),
      /step 2 "add to cart": action 1: unknown action "hover"/,
    );
    await refused(
      withAction({ action: 'click', selector: `#${'a'.repeat(400)}` }),
      /step 2 "add to cart": action 1: a selector is at most 300 characters/,
    );
    await refused(
      { steps: Array.from({ length: 11 }, (_, i) => ({ kind: 'snapshot', name: `s${i}` })) },
      /a flow has at most 10 steps/,
    );
    await refused(
      { steps: [SHOP_FLOW.steps[0], { kind: 'navigate', name: 'metadata', url: 'http://169.254.169.254/latest/' }] },
      /step 2 "metadata": refused to reach 169\.254\.169\.254/,
    );
    // Nothing refused was kept.
    expect((ok(await api('projects/flow', 'GET', { url: cart(FAST) })) as { flow: unknown }).flow).toEqual(SHOP_FLOW);
  });

  it("measures each step, with a lab INP for the timespan that follows the handler's cost", async () => {
    const fast = await updated(cart(FAST));
    const slow = await updated(cart(SLOW));
    for (const cell of [fast, slow]) {
      expect(cell.steps!.map((s) => `${s.kind} ${s.name}`)).toEqual([
        'navigate product',
        'timespan add to cart',
        'snapshot cart',
      ]);
      // The navigation is the cell's own result; the snapshot has its category scores.
      expect(cell.steps![0]!.lighthouse['finalDisplayedUrl']).toBe(cell.lighthouse['finalDisplayedUrl']);
      expect(cell.steps![2]!.runs[0]!.scores['accessibility']).toBeGreaterThan(0);
      expect(cell.steps![2]!.lighthouse['gatherMode']).toBe('snapshot');
      expect(cell.steps![1]!.lighthouse['gatherMode']).toBe('timespan');
    }
    const fastInp = stepInp(fast)!;
    const slowInp = stepInp(slow)!;
    // The handler holds the thread for its whole cost (a wall-clock loop, desktop: no slowdown),
    // so each INP is at least that; the slower one is larger by most of the difference.
    expect(fastInp).toBeGreaterThanOrEqual(FAST);
    expect(slowInp).toBeGreaterThanOrEqual(SLOW);
    expect(slowInp - fastInp).toBeGreaterThan((SLOW - FAST) / 2);
    // Navigations have no interaction: the page's own INP stays null.
    expect(fast.steps![0]!.runs[0]!.inp).toBeNull();
  }, 300_000);

  it('answers the steps in /v1/audit and names them in /v1/overview', async () => {
    const list = ok(await api('updates', 'GET', { url: cart(SLOW) })) as { desktop: Array<{ date: string }> };
    const date = list.desktop.at(-1)!.date;
    const cell = auditResultSchema.parse(ok(await api('audit', 'GET', { url: cart(SLOW), date, device: 'desktop' })))
      .desktop!.london!;
    const timespan = cell.steps!.find((s) => s.kind === 'timespan')!;
    const audits = timespan.lighthouse['audits'] as Record<string, { numericValue?: number }>;
    expect(audits['interaction-to-next-paint']!.numericValue).toBe(timespan.runs[0]!.inp);
    const today = date.slice(0, 10);
    const records = overviewResponseSchema
      .parse(ok(await api('overview', 'GET', { startDate: today, endDate: today, section: 'lighthouse' })))
      .filter((r) => r.url === cart(SLOW) && r.kpi === 'performance');
    expect(records.map((r) => r.step)).toEqual(['product', 'add to cart', 'cart']);
    expect((records[1]!.data as { inp: number }).inp).toBe(Math.round(timespan.runs[0]!.inp! * 10) / 10);
  });

  it('holds the timespan to a step budget: the CLI fails with exit 1, the server sends budget.failed', async () => {
    ok(await api('budgets', 'POST', { url: cart(SLOW), budgets: { 'add to cart.inp': 200 } }));
    const run = await runPerfwatch(
      ['update', cart(SLOW), '--ci', '--device', 'desktop', '--budget', 'add to cart.inp=200'],
      { PERFWATCH_TOKEN: token, PERFWATCH_SERVER: gateway.url },
    );
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(
      /budget add to cart\.inp\s*│\s*add to cart: INP \d+ ms, budget at most 200 ms\s*│\s*FAIL/,
    );
    // The server's own check: confirmed by a second run, then announced once.
    const deadline = Date.now() + 60_000;
    while (!received.some((body) => body.includes('budget.failed')) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 250));
    const failed = received
      .map((body) => webhookPayloadSchema.parse(JSON.parse(body)))
      .find((p) => p.event === 'budget.failed');
    expect(failed, received.join('\n')).toBeDefined();
    expect(JSON.stringify(failed)).toContain('add to cart: INP');
  }, 300_000);

  it('ends a run whose step cannot be taken with a failure naming it, and measures the other cells', async () => {
    // "Quick buy" is shown on wide screens only: the mobile run cannot click it, the desktop one can.
    const url = `${cart(FAST)}&quick`;
    await gateway.admin.addProject('shop', url, { locations: ['london'], runs: 1 });
    ok(
      await api('projects/flow', 'PUT', {
        url,
        flow: {
          steps: [
            { kind: 'navigate', name: 'product' },
            { kind: 'timespan', name: 'quick buy', actions: [{ action: 'click', text: 'Quick buy' }] },
          ],
        },
      }),
    );
    const result = auditResultSchema.parse(ok(await api('update', 'GET', { url })));
    expect(stepInp(result.desktop!.london!, 'quick buy')).toBeGreaterThanOrEqual(FAST);
    expect(result.mobile).toBeUndefined();
    expect(result.missing).toEqual([
      {
        device: 'mobile',
        location: 'london',
        reason: expect.stringMatching(
          /^FLOW_STEP_FAILED: step 2 "quick buy": action 1 \(click text "Quick buy"\) timed out/,
        ),
      },
    ]);
  }, 300_000);
});
