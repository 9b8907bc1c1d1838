import { randomUUID } from 'node:crypto';
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { authenticate } from './auth.ts';
import { errorHandler, notFoundRoute, onlyGetAndPost } from './http-errors.ts';
import { auditRoute } from './routes/audit-route.ts';
import { updateRoute } from './routes/update-route.ts';
import type { Store } from './store/store.ts';
import type { UpdateService } from './update-service.ts';

export interface AppDeps {
  store: Store;
  updates: UpdateService;
  logger: Logger;
  bodyLimit?: string;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,100}$/;

/** Builds the gateway's HTTP app from its dependencies. Never listens: see createServer. */
export function createApp({ store, updates, logger, bodyLimit = '100kb' }: AppDeps): Express {
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

  const v1 = express.Router();
  const json = express.json({ limit: bodyLimit, strict: false });
  const auth = authenticate(store);
  v1.all('/update', onlyGetAndPost, json, auth, updateRoute({ store, updates }));
  v1.all('/audit', onlyGetAndPost, json, auth, auditRoute({ store }));
  app.use('/v1', v1);

  app.use(notFoundRoute);
  app.use(errorHandler(logger));
  return app;
}
