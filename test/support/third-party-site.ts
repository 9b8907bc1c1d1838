import { once } from 'node:events';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A page whose largest content is a picture, on 127.0.0.1, that loads a third party's script
 * once `addThirdParty()` is called: the script comes from 127.0.0.2 (THIRD_PARTY_HOST), another
 * origin and another entity for Lighthouse (which names an unrecognised host's entity by the host
 * itself), and keeps the main thread busy for SCRIPT_BUSY_MS, as a tag manager or chat widget
 * would. An address, not `localhost`: where that name also resolves to ::1, the agents' target
 * guard, allowed 127.0.0.0/8 in the tests, refuses it (it checks every address of a name).
 */
export interface ThirdPartySite {
  pageUrl: string;
  /** The page's largest content: an <img> nearly as wide as a desktop viewport. */
  pictureUrl: string;
  scriptUrl: string;
  /** The script's body, in bytes (sent as it is, uncompressed). */
  scriptBytes: number;
  addThirdParty(): void;
  close(): Promise<void>;
}

export const SCRIPT_BUSY_MS = 400;
/** Loopback on Linux, as all of 127.0.0.0/8 is. */
export const THIRD_PARTY_HOST = '127.0.0.2';

/** About 30 kB: a size no other request of the page has, so its transfer is unmistakable. */
const SCRIPT = `/* widget ${'x'.repeat(30_000)} */
(() => { const end = performance.now() + ${SCRIPT_BUSY_MS}; while (performance.now() < end); })();
`;

/**
 * Stars enough that Chrome counts the picture as contentful: it leaves images under 0.05 bits per
 * displayed pixel (its encoded size over its area) out of LCP, as placeholders.
 */
const STARS = Array.from({ length: 400 }, (_, i) => {
  const [x, y, r] = [(i * 7919) % 1200, (i * 104_729) % 420, 1 + (i % 3)];
  return `<circle cx="${x}" cy="${y}" r="${r}" fill="#fff" opacity="0.${(i % 9) + 1}"/>`;
}).join('');

const PICTURE = `<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="700" viewBox="0 0 1200 700">
<rect width="1200" height="700" fill="#2b4c7e"/>${STARS}<circle cx="900" cy="200" r="120" fill="#f2c14e"/>
<path d="M0 700 L400 300 L700 600 L900 420 L1200 700 Z" fill="#1d3557"/></svg>`;

const page = (script: string | null) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="description" content="A page whose largest content is a picture.">
  <title>Picture page — fixture</title>
  <!-- No favicon request: Chrome makes it late or not at all, a request that comes and goes between runs. -->
  <link rel="icon" href="data:,">
  ${script ? `<script src="${script}"></script>` : ''}
</head>
<body style="margin:0">
  <p>Mountains at dusk.</p>
  <img src="/picture.svg" width="1200" height="700" alt="Mountains at dusk" style="max-width:100%;height:auto">
</body>
</html>
`;

export async function startThirdPartySite(): Promise<ThirdPartySite> {
  let withScript = false;
  const widget = await listen(THIRD_PARTY_HOST, (req, res) => {
    if (req.url !== '/widget.js') return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': 'text/javascript', 'Cache-Control': 'no-store' }).end(SCRIPT);
  });
  const scriptUrl = `http://${THIRD_PARTY_HOST}:${port(widget)}/widget.js`;
  const site = await listen('127.0.0.1', (req, res) => {
    if (req.url === '/picture.svg')
      return void res.writeHead(200, { 'Content-Type': 'image/svg+xml', 'Cache-Control': 'no-store' }).end(PICTURE);
    if (req.url !== '/picture.html') return void res.writeHead(404).end();
    res
      .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' })
      .end(page(withScript ? scriptUrl : null));
  });
  const origin = `http://127.0.0.1:${port(site)}`;
  return {
    pageUrl: `${origin}/picture.html`,
    pictureUrl: `${origin}/picture.svg`,
    scriptUrl,
    scriptBytes: Buffer.byteLength(SCRIPT),
    addThirdParty: () => void (withScript = true),
    close: async () => {
      await close(site);
      await close(widget);
    },
  };
}

async function listen(host: string, handler: RequestListener): Promise<Server> {
  const server = createServer(handler);
  server.listen(0, host);
  await once(server, 'listening');
  return server;
}

const port = (server: Server) => String((server.address() as AddressInfo).port);

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
