import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookListSchema } from '@perfwatch/common';
import { documented, send, type Params } from '../support/api-requests.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// /v1/webhooks on a real gateway and the MongoDB-wire server: a user's webhooks are bounded
// and listed a page at a time, plain http goes only where the allow-list says, and the signing
// secret, shown once, is kept sealed.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
let token: string;

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    config: {
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_MAX_PER_USER: 3,
    },
  });
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
  ({ token } = await gateway.admin.createUser('hooks'));
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await nats?.dispose();
});

/**
 * A listing as GET and as POST, both answering alike; a change (an add, a removal) as POST, its
 * GET form refused with 405. Every reply checked against the OpenAPI document.
 */
async function webhooks(params: Params) {
  const auth = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
  const post = documented(
    checker,
    'webhooks',
    'POST',
    await send(gateway.url, 'webhooks', 'POST', { body: params }, auth),
  );
  const get = documented(
    checker,
    'webhooks',
    'GET',
    await send(gateway.url, 'webhooks', 'GET', { query: params }, auth),
  );
  if (params['targetUrl'] === undefined && params['remove'] === undefined)
    expect(post).toMatchObject({ status: get.status, body: get.body });
  else expect(get.status).toBe(405);
  return post;
}

describe('/v1/webhooks limits', () => {
  it('refuses a webhook past WEBHOOK_MAX_PER_USER, and plain http to an address the allow-list does not name, in the error envelope', async () => {
    const secrets: string[] = [];
    for (const n of [1, 2, 3]) {
      const added = await webhooks({ targetUrl: `http://127.0.0.1:9/hook-${n}` });
      expect(added.status).toBe(200);
      secrets.push(webhookListSchema.parse(added.body).created!.secret);
    }
    const fourth = await webhooks({ targetUrl: 'http://127.0.0.1:9/hook-4' });
    expect(fourth).toMatchObject({
      status: 400,
      body: {
        status: 'BAD_REQUEST',
        message: 'Too many webhooks.',
        errors: [
          "targetUrl: you have 3 webhooks, as many as one user may have; remove one first (the gateway's WEBHOOK_MAX_PER_USER is 3)",
        ],
      },
    });

    const plain = await webhooks({ targetUrl: 'http://93.184.216.34/hook' });
    expect(plain).toMatchObject({
      status: 400,
      body: { status: 'BAD_REQUEST', message: 'The webhook target is refused.' },
    });
    expect((plain.body as { errors: string[] }).errors).toEqual([
      'targetUrl: refused to reach 93.184.216.34: plain http:// goes only to addresses PERFWATCH_ALLOW_TARGETS lists, and 93.184.216.34 is not one; use https://',
    ]);

    // Kept sealed: neither the stored record nor any listing holds the secret shown once.
    const listed = webhookListSchema.parse((await webhooks({})).body);
    expect(listed.webhooks).toHaveLength(3);
    expect(JSON.stringify(listed)).not.toContain('pwhs_');
    for (const hook of listed.webhooks) {
      const stored = (await gateway.store.findWebhook(hook.id))!.secret;
      expect(stored).toMatch(/^pwsec1\./);
      for (const secret of secrets) expect(stored).not.toContain(secret.slice(5));
    }

    // Removing one makes room for one.
    expect((await webhooks({ remove: listed.webhooks[0]!.id })).status).toBe(200);
    expect((await webhooks({ targetUrl: 'http://127.0.0.1:9/hook-5' })).status).toBe(200);
  });

  it('lists a page at a time, oldest first, with `next` until the last page', async () => {
    const all = webhookListSchema.parse((await webhooks({})).body);
    expect(all.next).toBeUndefined();
    const ids = all.webhooks.map((w) => w.id);
    expect(ids).toHaveLength(3);

    const first = webhookListSchema.parse((await webhooks({ limit: '2' })).body);
    expect(first.webhooks.map((w) => w.id)).toEqual(ids.slice(0, 2));
    expect(first.next).toBe(ids[1]);
    const second = webhookListSchema.parse((await webhooks({ limit: '2', after: first.next })).body);
    expect(second.webhooks.map((w) => w.id)).toEqual(ids.slice(2));
    expect(second.next).toBeUndefined();

    expect(await webhooks({ limit: '0' })).toMatchObject({
      status: 400,
      body: { status: 'BAD_REQUEST', errors: ['limit must be a whole number from 1 to 100'] },
    });
    expect(await webhooks({ after: 'ffffffffffffffffffffffff' })).toMatchObject({
      status: 400,
      body: {
        status: 'BAD_REQUEST',
        message: 'Unknown page.',
        errors: [
          'after: no webhook of yours has the id ffffffffffffffffffffffff (removed since?); list again from the start',
        ],
      },
    });
  });
});
