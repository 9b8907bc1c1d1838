import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../store/sqlite-store.ts';
import { main } from './admin-cli.ts';
import { CART_FLOW } from '../../../test/support/lhr-fixtures.ts';

// `perfwatch admin set-flow` against the embedded store in a directory of its own: the flow it
// stores is the one updates run, checked as the API's PUT checks one.

const SHOP = 'https://shop.example/cart.html';
let dir: string;
let env: Record<string, string>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pw-set-flow-'));
  env = { PERFWATCH_DATA_DIR: dir };
  await admin('create-user', 'shopper');
  await admin('add-project', 'shopper', SHOP);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function admin(...argv: string[]) {
  let out = '';
  let err = '';
  const io = { out: { write: (text: string) => (out += text) }, err: { write: (text: string) => (err += text) } };
  const code = await main(['admin', ...argv], env, io);
  return { code, out, err };
}

/** A flow written to a file of the test's directory, for --file. */
async function flowFile(flow: unknown, name = 'flow.json'): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify(flow));
  return path;
}

/** The flow the store holds for the project, as an update would read it. */
async function storedFlow() {
  const store = new SqliteStore({ path: join(dir, 'perfwatch.sqlite') });
  await store.init();
  try {
    return (await store.listProjects()).find((p) => p.url === SHOP)?.flow;
  } finally {
    await store.close();
  }
}

describe('perfwatch admin set-flow', () => {
  it('stores a flow from a file, prints its steps, and clears it', async () => {
    const set = await admin('set-flow', 'shopper', SHOP, '--file', await flowFile(CART_FLOW));
    expect(set.code, set.err).toBe(0);
    expect(set.out).toBe(
      `flow of ${SHOP} set: 3 step(s): navigate "product", timespan "add to cart", snapshot "cart"\n`,
    );
    expect(await storedFlow()).toEqual(CART_FLOW);
    const json = await admin('set-flow', 'shopper', SHOP, '--file', await flowFile(CART_FLOW), '--json');
    expect(JSON.parse(json.out)).toEqual({ url: SHOP, flow: CART_FLOW });

    const cleared = await admin('set-flow', 'shopper', SHOP, '--clear');
    expect(cleared.out).toBe(`flow of ${SHOP} removed: its updates measure a navigation of it again\n`);
    expect(await storedFlow()).toBeNull();
    expect((await admin('set-flow', 'shopper', SHOP, '--clear')).out).toBe(`${SHOP} had no flow\n`);
  });

  it('refuses a flow by the step it is about, exit 1, and keeps the one stored', async () => {
    await admin('set-flow', 'shopper', SHOP, '--file', await flowFile(CART_FLOW));
    const hover = {
      steps: [CART_FLOW.steps[0], { kind: 'timespan', name: 'add to cart', actions: [{ action: 'hover', text: 'x' }] }],
    };
    const refused = await admin('set-flow', 'shopper', SHOP, '--file', await flowFile(hover, 'hover.json'));
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      /^perfwatch admin: steps\.1\.actions\.0\.action: step 2 "add to cart": action 1: unknown action "hover"/,
    );
    const unnamed = await admin(
      'set-flow',
      'shopper',
      SHOP,
      '--file',
      await flowFile({ steps: [{ kind: 'snapshot', name: 'a.b' }] }, 'dot.json'),
    );
    expect(unnamed.err).toMatch(/step 1 "a\.b": a step name is letters, digits, spaces, _ and -/);
    expect(await storedFlow()).toEqual(CART_FLOW);
  });

  it("refuses a navigate step to an address the gateway's rules forbid, unless PERFWATCH_ALLOW_TARGETS lists it", async () => {
    const local = {
      steps: [CART_FLOW.steps[0], { kind: 'navigate', name: 'admin page', url: 'http://127.0.0.1:9/admin' }],
    };
    const file = await flowFile(local);
    const refused = await admin('set-flow', 'shopper', SHOP, '--file', file);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      /the flow navigates to an address agents may not reach: steps\.1\.url: step 2 "admin page": refused to reach 127\.0\.0\.1/,
    );
    expect(await storedFlow()).toBeNull();
    env = { ...env, PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8' };
    expect((await admin('set-flow', 'shopper', SHOP, '--file', file)).code).toBe(0);
    expect(await storedFlow()).toEqual(local);
  });

  it('takes --file or --clear, one of them; an unreadable file and an unknown project are refused', async () => {
    const neither = await admin('set-flow', 'shopper', SHOP);
    expect([neither.code, neither.err]).toEqual([1, 'perfwatch admin: set-flow takes --file FILE or --clear\n']);
    expect((await admin('set-flow', 'shopper', SHOP, '--clear', '--file', 'x.json')).code).toBe(1);
    const missing = await admin('set-flow', 'shopper', SHOP, '--file', join(dir, 'none.json'));
    expect(missing.err).toMatch(/--file .*none\.json: ENOENT/);
    const other = await admin('set-flow', 'shopper', 'https://other.example/', '--clear');
    expect(other.err).toMatch(/shopper has no project at https:\/\/other\.example\//);
    expect((await admin('--help')).out).toMatch(/set-flow NAME URL --file FILE \| --clear/);
  });
});
