import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SIGNATURE_TOLERANCE_SECONDS, signWebhookBody, verifyWebhookSignature } from './webhooks.ts';

const secret = 'pwhs_test';
const body = '{"event":"update.failed"}';
const t = 1_780_000_000;
const at = (seconds: number) => ({ now: seconds * 1000 });

describe('webhook signatures', () => {
  it("sign the time with the body as Stripe does (t=<unix>,v1=<HMAC of 't.body'>), checkable by hand", () => {
    const header = signWebhookBody(secret, body, t);
    const byHand = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    expect(header).toBe(`t=${t},v1=${byHand}`);
    expect(verifyWebhookSignature(secret, body, header, at(t))).toBe(true);
    expect(verifyWebhookSignature(secret, Buffer.from(body), header, at(t))).toBe(true);
  });

  it('refuse a delivery replayed outside the window, whose time or body was changed, or signed with another secret', () => {
    const header = signWebhookBody(secret, body, t);
    expect(verifyWebhookSignature(secret, body, header, at(t + SIGNATURE_TOLERANCE_SECONDS))).toBe(true);
    expect(verifyWebhookSignature(secret, body, header, at(t - SIGNATURE_TOLERANCE_SECONDS))).toBe(true);
    expect(verifyWebhookSignature(secret, body, header, at(t + SIGNATURE_TOLERANCE_SECONDS + 1))).toBe(false);
    expect(verifyWebhookSignature(secret, body, header, { now: (t + 60) * 1000, toleranceSeconds: 30 })).toBe(false);
    // A fresh time put on an old signature: the HMAC no longer matches.
    const moved = header.replace(`t=${t}`, `t=${t + 600}`);
    expect(verifyWebhookSignature(secret, body, moved, at(t + 600))).toBe(false);
    expect(verifyWebhookSignature(secret, `${body} `, header, at(t))).toBe(false);
    expect(verifyWebhookSignature('pwhs_other', body, header, at(t))).toBe(false);
  });

  it('accept any one matching v1 (a secret being replaced), and refuse headers without exactly one time', () => {
    const good = signWebhookBody(secret, body, t).split(',')[1]!;
    expect(verifyWebhookSignature(secret, body, `t=${t},v1=${'0'.repeat(64)},${good}`, at(t))).toBe(true);
    expect(verifyWebhookSignature(secret, body, good, at(t))).toBe(false);
    expect(verifyWebhookSignature(secret, body, `t=${t},t=${t},${good}`, at(t))).toBe(false);
    expect(verifyWebhookSignature(secret, body, `t=soon,${good}`, at(t))).toBe(false);
    // The old form (sha256=<HMAC of the body alone>) is not accepted: it carries no time.
    const old = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    expect(verifyWebhookSignature(secret, body, old, at(t))).toBe(false);
    expect(verifyWebhookSignature(secret, body, undefined, at(t))).toBe(false);
  });
});
