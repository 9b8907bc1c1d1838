import { randomUUID } from 'node:crypto';
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { apiDocsRouter } from './api-docs.ts';
import { authenticate } from './auth.ts';
import { errorHandler, notFoundRoute, onlyGetAndPost } from './http-errors.ts';
import { createOpenApiDocument } from './openapi.ts';
import { acceptsJson, jsonBodyOnly, perTokenLimit } from './request-guards.ts';
import { auditRoute } from './routes/audit-route.ts';
import { overviewRoute } from './routes/overview-route.ts';
import { updateRoute } from './routes/update-route.ts';
import { updatesRoute } from './routes/updates-route.ts';
import type { Store } from './store/store.ts';
import type { UpdateService } from './update-service.ts';

export interface AppDeps {
  store: Store;
  updates: UpdateService;
  logger: Logger;
  bodyLimit?: string;
  /** Per token and minute. */
  rateLimits?: { updates: number; reads: number };
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,100}$/;

/** Builds the gateway's HTTP app from its dependencies. Never listens: see createServer. */
export function createApp({ store, updates, logger, bodyLimit = '100kb', rateLimits = { updates: 60, reads: 600 } }: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  app.use((req, res, next) => {
    const given = req.get('x-request-id');
    req.requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    res.set('X-Request-Id', req.requestId);
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  const openapi = createOpenApiDocument();
  app.get('/v1/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  app.use('/v1/docs', apiDocsRouter());

  const v1 = express.Router();
  const json = express.json({ limit: bodyLimit, strict: false });
  const auth = authenticate(store);
  const before = [onlyGetAndPost, acceptsJson, jsonBodyOnly, json, auth];
  const updateLimit = perTokenLimit(rateLimits.updates, 'updates');
  const readLimit = perTokenLimit(rateLimits.reads, 'reads');
  v1.all('/update', ...before, updateLimit, updateRoute({ store, updates }));
  v1.all('/audit', ...before, readLimit, auditRoute({ store }));
  v1.all('/updates', ...before, readLimit, updatesRoute({ store }));
  v1.all('/overview', ...before, readLimit, overviewRoute({ store, logger }));
  app.use('/v1', v1);

  app.use(notFoundRoute);
  app.use(errorHandler(logger));
  return app;
}
