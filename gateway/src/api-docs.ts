import express, { type Router } from 'express';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

/**
 * The human-readable API reference at /v1/docs/: Swagger UI served from the swagger-ui-dist
 * package itself (no CDN), pointed at /v1/openapi.json.
 */
export function apiDocsRouter(): Router {
  const router = express.Router();
  router.get('/swagger-initializer.js', (_req, res) => {
    res.type('application/javascript').send(`window.onload = function () {
  window.ui = SwaggerUIBundle({ url: '../openapi.json', dom_id: '#swagger-ui', deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });
};
`);
  });
  const assets = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  router.use(express.static(assets, { index: 'index.html' }));
  return router;
}
