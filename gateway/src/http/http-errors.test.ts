import type { AddressInfo } from 'node:net';
import express from 'express';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { errorEnvelopeSchema } from '@perfwatch/common';
import { errorHandler } from './http-errors.ts';
import { NoResultError, type NoResultKind } from '../updates/no-result.ts';
import { UpdateRefused, type RefusalKind } from '../updates/update-refused.ts';
import { StoreFull } from '../store/store.ts';

/** What a client is answered when a route throws `error`. */
async function answerTo(error: Error): Promise<{ status: number; retryAfter: string | null; body: unknown }> {
  const app = express();
  app.get('/', () => {
    throw error;
  });
  app.use(errorHandler(pino({ level: 'silent' })));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: errorEnvelopeSchema.parse(await res.json()),
    };
  } finally {
    server.close();
  }
}

describe('errorHandler', () => {
  it.each([
    ['NO_AGENT', 503, 'SERVICE_UNAVAILABLE'],
    ['CREDENTIALS_UNREADABLE', 503, 'SERVICE_UNAVAILABLE'],
    ['TIMED_OUT', 504, 'GATEWAY_TIMEOUT'],
    ['FAILED', 502, 'BAD_GATEWAY'],
  ] as const)(
    'answers an update that produced nothing (%s) with %i in the envelope, naming each reason',
    async (kind: NoResultKind, http, status) => {
      const answer = await answerTo(new NoResultError(kind, 'nothing came of it', ['mobile/london: why'], false));
      expect(answer).toEqual({
        status: http,
        retryAfter: null,
        body: { status, message: 'nothing came of it', errors: ['mobile/london: why'] },
      });
    },
  );

  it.each([
    ['BACKLOG_FULL', 429, 'TOO_MANY_REQUESTS', '60'],
    ['LOCATION_FULL', 429, 'TOO_MANY_REQUESTS', '60'],
    ['NOT_QUEUED', 503, 'SERVICE_UNAVAILABLE', null],
  ] as const)(
    'answers an update refused as %s with %i, and says when to come back',
    async (kind: RefusalKind, http, status, retryAfter) => {
      const answer = await answerTo(new UpdateRefused(kind, 'not now', ['your backlog: full']));
      expect(answer).toEqual({
        status: http,
        retryAfter,
        body: { status, message: 'not now', errors: ['your backlog: full'] },
      });
    },
  );

  it('answers a write the store had no room for with 503, saying nothing was saved and not where the store is', async () => {
    const answer = await answerTo(new StoreFull('/srv/perfwatch/data/perfwatch.sqlite'));
    expect(answer).toMatchObject({
      status: 503,
      body: {
        status: 'SERVICE_UNAVAILABLE',
        message: 'The service has no room left to store this: nothing was saved.',
      },
    });
    expect(JSON.stringify(answer.body)).not.toContain('/srv/perfwatch');
  });
});
