import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from './client-cli.ts';
import { CART_FLOW } from '../../test/support/lhr-fixtures.ts';

// `perfwatch flow` against a gateway stand-in that answers one reply and records what it was
// asked: the method, the path with its query, the body.

const SHOP = 'https://shop.example/cart.html';
let dir: string;
beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'pw-flow-cli-'))));
afterEach(() => rm(dir, { recursive: true, force: true }));

async function perfwatchFlow(reply: { status?: number; body: unknown }, argv: string[], stdin?: string) {
  const asked: Array<{ method: string; path: string; body?: unknown }> = [];
  let out = '';
  let err = '';
  const fetch = async (url: string | URL | Request, init?: RequestInit) => {
    const { pathname, search } = new URL(String(url));
    asked.push({
      method: init?.method ?? 'GET',
      path: `${pathname}${search}`,
      ...(init?.body ? { body: JSON.parse(String(init.body)) as unknown } : {}),
    });
    return new Response(JSON.stringify(reply.body), {
      status: reply.status ?? 200,
      headers: { 'content-type': 'application/json' },
    });
  };
  const code = await main(
    ['flow', ...argv, '--server', 'http://gateway.test', '--token', 'pw_x'],
    {},
    {
      out: { write: (text: string) => (out += text) },
      err: { write: (text: string) => (err += text) },
      fetch,
      ...(stdin !== undefined ? { stdin: Readable.from([stdin]) } : {}),
    },
  );
  return { code, asked, out, err };
}

const query = `/v1/projects/flow?url=${encodeURIComponent(SHOP)}`;

describe('perfwatch flow', () => {
  it("shows a project's flow, a step a line, never the values it types", async () => {
    const flow = {
      steps: [
        { kind: 'navigate', name: 'login', url: 'https://shop.example/login' },
        {
          kind: 'timespan',
          name: 'sign in',
          actions: [
            { action: 'type', selector: '#password', value: 'hunter2' },
            { action: 'press', key: 'Enter' },
            { action: 'waitFor', text: 'Welcome', timeoutMs: 5000 },
            { action: 'scroll', y: 800 },
          ],
        },
        { kind: 'navigate', name: 'product' },
      ],
    };
    const run = await perfwatchFlow({ body: { url: SHOP, flow } }, [SHOP]);
    expect(run.asked).toEqual([{ method: 'GET', path: query }]);
    expect(run.out).toBe(
      [
        `flow of ${SHOP}: 3 step(s)`,
        '  1. navigate "login" https://shop.example/login',
        '  2. timespan "sign in": type #password, press Enter, waitFor text "Welcome" 5000 ms, scroll y=800',
        `  3. navigate "product" (the project's page)`,
        '',
      ].join('\n'),
    );
    expect(run.out).not.toContain('hunter2');
    const none = await perfwatchFlow({ body: { url: SHOP, flow: null } }, [SHOP]);
    expect(none.out).toBe(`${SHOP} has no flow: its updates measure a navigation of it\n`);
    const json = await perfwatchFlow({ body: { url: SHOP, flow: CART_FLOW } }, [SHOP, '--json']);
    expect(JSON.parse(json.out)).toEqual({ url: SHOP, flow: CART_FLOW });
  });

  it('sets a flow from a file, or from standard input as `perfwatch flow --json` prints one', async () => {
    const file = join(dir, 'cart.json');
    await writeFile(file, JSON.stringify(CART_FLOW));
    const set = await perfwatchFlow({ body: { url: SHOP, flow: CART_FLOW } }, [SHOP, '--file', file]);
    expect(set.code, set.err).toBe(0);
    expect(set.asked).toEqual([{ method: 'PUT', path: '/v1/projects/flow', body: { url: SHOP, flow: CART_FLOW } }]);
    expect(set.out.split('\n')[0]).toBe(`flow of ${SHOP} set: 3 step(s)`);
    expect(set.out).toContain('  2. timespan "add to cart": click text "Add to cart"\n');

    const copied = JSON.stringify({ url: 'https://other.example/', flow: CART_FLOW });
    const piped = await perfwatchFlow({ body: { url: SHOP, flow: CART_FLOW } }, [SHOP, '--file', '-'], copied);
    expect(piped.asked[0]!.body).toEqual({ url: SHOP, flow: CART_FLOW });
  });

  it('names the step a flow file is wrong at, exits 2 and sends nothing', async () => {
    const file = join(dir, 'wrong.json');
    const wrong = {
      steps: [CART_FLOW.steps[0], { kind: 'timespan', name: 'add to cart', actions: [{ action: 'click' }] }],
    };
    await writeFile(file, JSON.stringify(wrong));
    const run = await perfwatchFlow({ body: {} }, [SHOP, '--file', file]);
    expect(run.code).toBe(2);
    expect(run.asked).toEqual([]);
    // A usage error: the message, then the usage.
    expect(run.err.split('usage:\n')[0]).toBe(
      `perfwatch flow: --file ${file} is not a flow (docs/flows.md):\n  steps.1.actions.0: step 2 "add to cart": action 1 (click): needs a selector or a text\n`,
    );
    const notJson = await perfwatchFlow({ body: {} }, [SHOP, '--file', '-'], '{"steps": [');
    expect([notJson.code, notJson.err]).toEqual([2, expect.stringMatching(/^perfwatch flow: --file standard input: /)]);
  });

  it("reports the gateway's refusal (a navigate target its rules forbid) and exits 3", async () => {
    const file = join(dir, 'metadata.json');
    const flow = { steps: [{ kind: 'navigate', name: 'metadata', url: 'http://169.254.169.254/latest/' }] };
    await writeFile(file, JSON.stringify(flow));
    const envelope = {
      status: 'BAD_REQUEST',
      message: 'The flow navigates to an address agents may not reach.',
      errors: ['steps.0.url: step 1 "metadata": refused to reach 169.254.169.254'],
    };
    const run = await perfwatchFlow({ status: 400, body: envelope }, [SHOP, '--file', file]);
    expect(run.code).toBe(3);
    expect(run.err).toMatch(/^perfwatch flow: HTTP 400 BAD_REQUEST: .* step 1 "metadata": refused to reach/);
  });

  it('clears a flow with --clear (DELETE), and takes --file or --clear, not both', async () => {
    const cleared = await perfwatchFlow({ body: { url: SHOP, removed: true } }, [SHOP, '--clear']);
    expect(cleared.asked).toEqual([{ method: 'DELETE', path: query }]);
    expect(cleared.out).toBe(`flow of ${SHOP} removed: its updates measure a navigation of it again\n`);
    const none = await perfwatchFlow(
      { status: 404, body: { status: 'NOT_FOUND', message: 'This project has no flow.', errors: [] } },
      [SHOP, '--clear'],
    );
    expect(none.code).toBe(3);
    const both = await perfwatchFlow({ body: {} }, [SHOP, '--clear', '--file', 'x.json']);
    expect([both.code, both.asked]).toEqual([2, []]);
    expect(both.err.split('\n')[0]).toBe('perfwatch flow: flow takes --file or --clear, not both');
  });
});
