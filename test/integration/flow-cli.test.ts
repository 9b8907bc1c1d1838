import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../client/src/client-cli.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';
import { CART_FLOW } from '../support/lhr-fixtures.ts';

// `perfwatch flow` against a real gateway (nats-server and the MongoDB-wire store): what it sends
// is what the API takes, what it prints is what the API stored, and the gateway's own refusal
// (a navigate step to an address its rules forbid) reaches the user by its step.

const SHOP = 'https://shop.example/cart.html';
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let token: string;
let dir: string;

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url });
  token = (await gateway.admin.createUser('flows')).token;
  await gateway.admin.addProject('flows', SHOP);
  dir = await mkdtemp(join(tmpdir(), 'pw-flow-cli-'));
});

afterAll(async () => {
  await gateway?.stop();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function perfwatch(...argv: string[]) {
  let out = '';
  let err = '';
  const io = { out: { write: (text: string) => (out += text) }, err: { write: (text: string) => (err += text) } };
  const code = await main(argv, { PERFWATCH_SERVER: gateway.url, PERFWATCH_TOKEN: token }, io);
  return { code, out, err };
}

async function flowFile(name: string, flow: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify(flow));
  return path;
}

describe('perfwatch flow against a gateway', () => {
  it('sets a flow the updates then run, shows it, and clears it', async () => {
    const set = await perfwatch('flow', SHOP, '--file', await flowFile('cart.json', CART_FLOW));
    expect(set.code, set.err).toBe(0);
    expect(set.out).toBe(
      [
        `flow of ${SHOP} set: 3 step(s)`,
        `  1. navigate "product" (the project's page)`,
        '  2. timespan "add to cart": click text "Add to cart"',
        '  3. snapshot "cart"',
        '',
      ].join('\n'),
    );
    expect((await gateway.store.listProjects()).find((p) => p.url === SHOP)?.flow).toEqual(CART_FLOW);
    const shown = await perfwatch('flow', SHOP, '--json');
    expect(JSON.parse(shown.out)).toEqual({ url: SHOP, flow: CART_FLOW });

    const cleared = await perfwatch('flow', SHOP, '--clear');
    expect(cleared.code, cleared.err).toBe(0);
    expect((await perfwatch('flow', SHOP)).out).toBe(`${SHOP} has no flow: its updates measure a navigation of it\n`);
    // Nothing left to remove: the API's 404, exit 3.
    const again = await perfwatch('flow', SHOP, '--clear');
    expect([again.code, again.err]).toEqual([3, expect.stringMatching(/HTTP 404 NOT_FOUND: This project has no flow/)]);
  });

  it("names the step the gateway's address rules refuse, exit 3, and stores nothing", async () => {
    const metadata = {
      steps: [CART_FLOW.steps[0], { kind: 'navigate', name: 'metadata', url: 'http://169.254.169.254/latest/' }],
    };
    const refused = await perfwatch('flow', SHOP, '--file', await flowFile('metadata.json', metadata));
    expect(refused.code).toBe(3);
    expect(refused.err).toMatch(
      /^perfwatch flow: HTTP 400 BAD_REQUEST: The flow navigates to an address agents may not reach\. steps\.1\.url: step 2 "metadata": refused to reach 169\.254\.169\.254/,
    );
    expect((await gateway.store.listProjects()).find((p) => p.url === SHOP)?.flow).toBeNull();
  });
});
