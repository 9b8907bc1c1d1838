import { expect, it } from 'vitest';
import { WebhookLimitReached } from '../../gateway/src/store/store.ts';
import { describeOnBothStores } from './store-backends.ts';

// Webhooks and their outbox of deliveries (WebhooksStore).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('webhooks', (store) => {
  it('keeps webhooks per user and an outbox of deliveries: stored once per id, claimed under a lease, recorded, listed newest first', async () => {
    const user = await store().createUser('hook-owner');
    const other = await store().createUser('hook-other');
    const hook = await store().addWebhook({
      userId: user.id,
      targetUrl: 'https://hooks.example/a',
      projectUrl: null,
      format: 'json',
      secret: 'pwhs_secret',
    });
    await store().addWebhook({
      userId: other.id,
      targetUrl: 'https://hooks.example/b',
      projectUrl: 'https://shop.example/',
      format: 'slack',
      secret: 'pwhs_other',
    });
    expect((await store().listWebhooks(user.id)).map((h) => [h.id, h.targetUrl, h.secret, h.projectUrl])).toEqual([
      [hook.id, 'https://hooks.example/a', 'pwhs_secret', null],
    ]);

    const t0 = new Date('2026-06-01T10:00:00Z');
    const first = {
      id: 'd1',
      webhookId: hook.id,
      userId: user.id,
      event: 'budget.failed',
      body: '{"a":1}',
      createdAt: t0,
    };
    await store().enqueueDeliveries([
      first,
      { ...first, id: 'd2', event: 'budget.recovered', body: '{"b":2}', createdAt: new Date(t0.getTime() + 1000) },
    ]);
    // The same event announced again: still one delivery, its state untouched.
    await store().enqueueDeliveries([{ ...first, body: '{"changed":true}' }]);

    const claimed = await store().claimDeliveries(new Date(t0.getTime() + 5_000), 10, 60_000);
    expect(claimed.map((d) => [d.id, d.body, d.status, d.attempts]).sort()).toEqual([
      ['d1', '{"a":1}', 'pending', 0],
      ['d2', '{"b":2}', 'pending', 0],
    ]);
    // Claimed: nobody else takes them until the lease runs out.
    expect(await store().claimDeliveries(new Date(t0.getTime() + 6_000), 10, 60_000)).toEqual([]);

    await store().recordDeliveryAttempt('d1', {
      status: 'pending',
      error: 'HTTP 503',
      nextAttemptAt: new Date(t0.getTime() + 10_000),
    });
    await store().recordDeliveryAttempt('d2', { status: 'delivered', at: new Date(t0.getTime() + 7_000) });
    const again = await store().claimDeliveries(new Date(t0.getTime() + 10_000), 10, 60_000);
    expect(again.map((d) => [d.id, d.attempts, d.lastError])).toEqual([['d1', 1, 'HTTP 503']]);
    await store().recordDeliveryAttempt('d1', { status: 'failed', error: 'gave up' });

    const listed = await store().listDeliveries(hook.id, 10);
    expect(listed.map((d) => [d.id, d.status, d.attempts, d.lastError])).toEqual([
      ['d2', 'delivered', 1, null],
      ['d1', 'failed', 2, 'gave up'],
    ]);
    expect(listed[0]!.deliveredAt).toEqual(new Date(t0.getTime() + 7_000));
    expect(await store().claimDeliveries(new Date(t0.getTime() + 3_600_000), 10, 60_000)).toEqual([]);

    // Another user cannot remove it; its owner removes it with its deliveries.
    expect(await store().removeWebhook(other.id, hook.id)).toBe(false);
    expect(await store().removeWebhook(user.id, hook.id)).toBe(true);
    expect(await store().listWebhooks(user.id)).toEqual([]);
    expect(await store().listDeliveries(hook.id, 10)).toEqual([]);
  });

  it("bounds a user's webhooks (racing adds included), finds one by id, leaves busy users' deliveries unclaimed, prunes finished ones", async () => {
    const user = await store().createUser('hook-bounded');
    const other = await store().createUser('hook-bounded-other');
    const hook = (userId: string, n: number) => ({
      userId,
      targetUrl: `https://hooks.example/${n}`,
      projectUrl: null,
      format: 'json' as const,
      secret: `pwhs_${n}`,
    });
    // Ten adds at once under a limit of 3: never more than 3 stored, the rest refused (the
    // MongoDB store may refuse all ten, each seeing the others' inserts before their removal).
    const adds = await Promise.allSettled(
      Array.from({ length: 10 }, (_, n) => store().addWebhook(hook(user.id, n), 3)),
    );
    const kept = adds.filter((a) => a.status === 'fulfilled');
    expect(kept.length).toBeLessThanOrEqual(3);
    for (const refused of adds.filter((a) => a.status === 'rejected'))
      expect(refused.reason).toBeInstanceOf(WebhookLimitReached);
    expect(await store().listWebhooks(user.id)).toHaveLength(kept.length);
    while ((await store().listWebhooks(user.id)).length < 3) await store().addWebhook(hook(user.id, 10), 3);
    await expect(store().addWebhook(hook(user.id, 11), 3)).rejects.toBeInstanceOf(WebhookLimitReached);
    const hooks = await store().listWebhooks(user.id);
    expect(hooks).toHaveLength(3);
    const otherHook = await store().addWebhook(hook(other.id, 12), 3);

    const found = await store().findWebhook(hooks[0]!.id);
    expect(found).toEqual(hooks[0]);
    expect(await store().findWebhook('0123456789abcdef01234567')).toBeNull();
    await store().setWebhookSecret(hooks[0]!.id, 'pwsec1.sealed');
    expect((await store().findWebhook(hooks[0]!.id))!.secret).toBe('pwsec1.sealed');

    const t0 = new Date('2026-07-01T10:00:00Z');
    const delivery = (id: string, webhookId: string, userId: string, ageMs: number) => ({
      id,
      webhookId,
      userId,
      event: 'update.failed',
      body: '{}',
      createdAt: new Date(t0.getTime() - ageMs),
    });
    await store().enqueueDeliveries([
      delivery('bounded-a1', hooks[0]!.id, user.id, 3_000),
      delivery('bounded-a2', hooks[0]!.id, user.id, 2_000),
      delivery('bounded-b1', otherHook.id, other.id, 1_000),
    ]);
    // The user with enough in flight is skipped, however early its deliveries are due.
    const claimed = await store().claimDeliveries(t0, 10, 60_000, [user.id]);
    expect(claimed.map((d) => d.id)).toEqual(['bounded-b1']);
    expect((await store().claimDeliveries(t0, 1, 60_000, [])).map((d) => d.id)).toEqual(['bounded-a1']);

    // Finished deliveries older than the cut are pruned; pending ones stay, however old.
    await store().recordDeliveryAttempt('bounded-a1', { status: 'delivered', at: t0 });
    await store().recordDeliveryAttempt('bounded-b1', { status: 'failed', error: 'HTTP 410' });
    expect(await store().deleteDeliveriesBefore(new Date(t0.getTime() - 1_500))).toBe(1);
    expect((await store().listDeliveries(hooks[0]!.id, 10)).map((d) => d.id)).toEqual(['bounded-a2']);
    expect((await store().listDeliveries(otherHook.id, 10)).map((d) => d.id)).toEqual(['bounded-b1']);
    expect(await store().deleteDeliveriesBefore(t0)).toBe(1);
    expect(await store().listDeliveries(otherHook.id, 10)).toEqual([]);
  });
});
