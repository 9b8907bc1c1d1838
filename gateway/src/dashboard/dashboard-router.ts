import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import express, { type Router } from 'express';

/**
 * The dashboard: static files from this package at `/` and `/dashboard/`, plus Lighthouse's
 * own report renderer (`renderReport`) from the lighthouse package, for the full report view.
 * Nothing from a CDN. The page reads everything through /v1 with the token the user pastes.
 */
export function dashboardRouter(): Router {
  const router = express.Router();
  const root = fileURLToPath(new URL('./public/', import.meta.url));
  const reportRenderer = createRequire(import.meta.url).resolve('lighthouse/dist/report/bundle.esm.js');
  const headers = (res: express.Response) => {
    // Scripts only from here; styles inline too, because Lighthouse's renderer sets them.
    res.set(
      'Content-Security-Policy',
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    );
    res.set('X-Content-Type-Options', 'nosniff');
    res.set('Referrer-Policy', 'no-referrer');
  };
  router.get('/', (_req, res) => {
    headers(res);
    res.sendFile('index.html', { root });
  });
  router.get('/dashboard/vendor/lighthouse-report.js', (_req, res) => {
    headers(res);
    res.type('text/javascript').sendFile(reportRenderer);
  });
  router.use('/dashboard', express.static(root, { index: false, setHeaders: headers }));
  return router;
}
