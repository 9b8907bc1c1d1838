import { randomUUID } from 'node:crypto';
import { ObjectId } from 'mongodb';
import { expect, it } from 'vitest';
import type { SiteUpdateRecord } from '../../gateway/src/sites/store/site-updates-store.ts';
import { describeOnBothStores } from './store-backends.ts';

// Site updates (SiteUpdatesStore, issue 34): the record a site update's progress is computed
// from, kept across a restart, on both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('site updates', (store) => {
  const record = (userId: string): SiteUpdateRecord => ({
    id: randomUUID(),
    userId,
    siteId: new ObjectId().toHexString(),
    origin: 'https://shop.example',
    // Whole milliseconds: what both backends keep.
    createdAt: new Date(Math.floor(Date.now() / 1000) * 1000),
    pages: [
      { url: 'https://shop.example/', updateId: randomUUID(), reason: null },
      { url: 'https://shop.example/product/1', updateId: randomUUID(), reason: null },
      { url: 'https://shop.example/product/2', updateId: null, reason: 'not queued: the location is full' },
    ],
  });

  it("keeps a site update with its pages' updates and refusals, found by its organisation only", async () => {
    const ana = await store().createUser('ana-site-update');
    const ben = await store().createUser('ben-site-update');
    const update = record(ana.id);
    await store().addSiteUpdate(update);
    expect(await store().findSiteUpdate(ana.id, update.id)).toEqual(update);
    expect(await store().findSiteUpdate(ben.id, update.id)).toBeNull();
    expect(await store().findSiteUpdate(ana.id, randomUUID())).toBeNull();
  });
});
