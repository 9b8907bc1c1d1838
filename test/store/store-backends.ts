import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { lighthouseKpis, type Device, type Location } from '@perfwatch/common';
import { SqliteStore, type Store } from '@perfwatch/gateway';
import { loadLhr } from '../support/lhr-fixtures.ts';
import { newCell } from '../support/new-cells.ts';
import { testStore } from '../support/test-services.ts';

/**
 * A slice's contract: `cases` run against both backends, each from an empty database of its
 * own — the MongoDB store on the test server (FerretDB, or MongoDB in the containers project)
 * and the embedded SQLite store on a file. A case may use other slices to set up what it reads.
 */
export function describeOnBothStores(slice: string, cases: (store: () => Store) => void): void {
  describe(`${slice}: the MongoDB store`, () => {
    let store: Store;
    beforeAll(async () => {
      store = await testStore();
    });
    afterAll(async () => {
      await store?.close();
    });
    cases(() => store);
  });

  describe(`${slice}: the SQLite store`, () => {
    let dir: string;
    let store: Store;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), `perfwatch-${slice}-`));
      store = new SqliteStore({ path: join(dir, 'perfwatch.sqlite') });
      await store.init();
    });
    afterAll(async () => {
      await store?.close();
      await rm(dir, { recursive: true, force: true });
    });
    cases(() => store);
  });
}

/** A measured cell of a snapshot, from the real Lighthouse result of its device. */
export function storedResult(device: Device, location: Location) {
  const lighthouse = loadLhr(device, 1);
  return newCell({
    device,
    location,
    median: 1,
    runs: [],
    lighthouse,
    crux: { url: null },
    elementCount: 454,
    kpis: lighthouseKpis(lighthouse),
  });
}
