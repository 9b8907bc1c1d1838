import { setTimeout as sleep } from 'node:timers/promises';
import type { UpdateStatusView } from '@perfwatch/common';
import type { WaitOptions } from './api-client.ts';

/** Polls an async update through `read` until it is done or failed, or `timeoutMs` has passed. */
export async function waitForUpdate(
  read: (id: string) => Promise<UpdateStatusView>,
  id: string,
  { pollMs = 2_000, timeoutMs, onStatus }: WaitOptions & { timeoutMs: number },
): Promise<UpdateStatusView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await read(id);
    onStatus?.(status);
    if (status.status === 'done' || status.status === 'failed') return status;
    if (Date.now() + pollMs > deadline)
      throw new Error(`update ${id} is still ${status.status} after ${Math.round(timeoutMs / 1000)} s`);
    await sleep(pollMs);
  }
}
