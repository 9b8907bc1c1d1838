import express, { type Response, type Router } from 'express';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

/**
 * What the reference's pages may do: scripts and the spec from this origin only, no framing,
 * no sniffing a script out of a spec. Swagger UI sets inline styles (and draws its icons as
 * data: images), which is all it gets beyond 'self'.
 */
const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; object-src 'none'";

function docsHeaders(res: Response): void {
  res.set('Content-Security-Policy', DOCS_CSP);
  res.set('X-Content-Type-Options', 'nosniff');
  res.set('Referrer-Policy', 'no-referrer');
}

/**
 * The human-readable API reference at /v1/docs/: Swagger UI served from the swagger-ui-dist
 * package itself (no CDN), pointed at /v1/openapi.json.
 */
export function apiDocsRouter(): Router {
  const router = express.Router();
  router.get('/swagger-initializer.js', (_req, res) => {
    docsHeaders(res);
    res.type('application/javascript').send(`window.onload = function () {
  window.ui = SwaggerUIBundle({ url: '../openapi.json', dom_id: '#swagger-ui', deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });
};
`);
  });
  const assets = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  router.use(express.static(assets, { index: 'index.html', setHeaders: docsHeaders }));
  return router;
}
