import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import express, { type Router } from 'express';

/**
 * The dashboard: static files from this package at `/` and `/dashboard/`, plus Lighthouse's
 * own report renderer (`renderReport`) from the lighthouse package, for the full report view,
 * and its flow report renderer (dist/report/flow.js, with the styles Lighthouse's standalone
 * flow report inlines) for a flow's steps. Nothing from a CDN. The page reads everything
 * through /v1 with the token the user pastes.
 */
export function dashboardRouter(): Router {
  const router = express.Router();
  const root = fileURLToPath(new URL('./public/', import.meta.url));
  const lighthouse = createRequire(import.meta.url);
  const reportRenderer = lighthouse.resolve('lighthouse/dist/report/bundle.esm.js');
  const flowRenderer = lighthouse.resolve('lighthouse/dist/report/flow.js');
  const flowStyles = flowReportStyles(lighthouse);
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
  // A classic script drawing into the page's <main>: it needs nothing the policy does not allow.
  router.get('/dashboard/vendor/lighthouse-flow-report.js', (_req, res) => {
    headers(res);
    res.type('text/javascript').sendFile(flowRenderer);
  });
  router.get('/dashboard/vendor/lighthouse-flow-report.css', (_req, res, next) => {
    flowStyles().then((css) => {
      headers(res);
      res.type('text/css').send(css);
    }, next);
  });
  router.use('/dashboard', express.static(root, { index: false, setHeaders: headers }));
  return router;
}

/**
 * The flow report's styles as Lighthouse's own flow report has them (report/generator/
 * flow-report-assets.js): the report's, then the flow's. Read once, on the first request.
 */
function flowReportStyles(lighthouse: NodeJS.Require): () => Promise<string> {
  let styles: Promise<string> | undefined;
  return () => {
    styles ??= Promise.all(
      ['lighthouse/report/assets/styles.css', 'lighthouse/flow-report/assets/styles.css'].map((file) =>
        readFile(lighthouse.resolve(file), 'utf8'),
      ),
    ).then((parts) => parts.join('\n'));
    // A failed read is tried again by the next request.
    styles.catch(() => (styles = undefined));
    return styles;
  };
}
