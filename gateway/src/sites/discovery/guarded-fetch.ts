import type { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { PERFWATCH_VERSION, TargetRefused, type TargetGuard } from '@perfwatch/common';
import { pinnedLookup } from '../../alerts/webhook-post.ts';
import { Refused } from './discovery-bounds.ts';

/** An answer that is not a redirect, its body still to be read (or discarded). */
interface Answer {
  /** The URL that answered, after redirects. */
  url: URL;
  status: number;
  contentType: string;
  contentEncoding: string;
  body: AsyncIterable<Buffer>;
  discard(): void;
}

export interface GuardedFetcher {
  /** GETs `url`, following redirects; throws Refused. `origin`: redirects must stay on it. */
  get(url: URL, options?: { origin?: string }): Promise<Answer>;
  close(): Promise<void>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Drops a body unread: undici reports its abort as an error, which nobody else would hear. */
const drop = (body: Readable) => {
  if (body.readableEnded || body.destroyed) return;
  body.on('error', () => undefined);
  body.destroy();
};

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value) ?? '';

/** `work`, or the signal's end first (a resolver that never answers holds nobody). */
function beforeSignal<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const late = () => reject(signal.reason as Error);
    signal.addEventListener('abort', late, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', late));
  });
}

/** One request, no redirect followed, through the agent the guard approved for its host. */
function requestOnce({
  agentFor,
  signal,
  onTime,
}: {
  agentFor: (host: string) => Promise<Agent>;
  signal: AbortSignal;
  onTime: (url: string) => Refused;
}) {
  return async (url: URL, asked: URL) => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Refused(asked.href, `${url.href.slice(0, 200)} is not an http(s) URL`);
    try {
      const dispatcher = await agentFor(url.hostname);
      return await request(url, {
        dispatcher,
        signal,
        headers: { 'user-agent': `perfwatch-discovery/${PERFWATCH_VERSION}`, 'accept-encoding': 'gzip' },
      });
    } catch (error) {
      if (signal.aborted) throw onTime(asked.href);
      const hop = url.href === asked.href ? '' : `redirected to ${url.href.slice(0, 200)}: `;
      if (error instanceof TargetRefused) throw new Refused(asked.href, `${hop}${error.message}`);
      const code = (error as NodeJS.ErrnoException).code;
      throw new Refused(asked.href, `${hop}could not be read (${code ?? (error as Error).name})`);
    }
  };
}

/**
 * The fetch discovery reads with: every request, and every redirect hop, goes only where the
 * audits' target guard lets a measured page go, and to the very address it approved (pinned in
 * the connection's lookup, as forge-fetch.ts does, so DNS rebinding cannot move it). A host is
 * judged once per discovery and its connections kept alive for the next document.
 */
export function createGuardedFetcher({
  guard,
  signal,
  maxRedirects,
  onTime,
}: {
  guard: TargetGuard;
  signal: AbortSignal;
  maxRedirects: number;
  /** The refusal for a request the time budget cut. */
  onTime: (url: string) => Refused;
}): GuardedFetcher {
  const agents = new Map<string, Promise<Agent>>();
  const agentFor = (host: string) => {
    let agent = agents.get(host);
    if (!agent) {
      agent = guard.resolve(host).then((approved) => new Agent({ connect: { lookup: pinnedLookup(approved) } }));
      agents.set(host, agent);
    }
    return beforeSignal(agent, signal);
  };
  const once = requestOnce({ agentFor, signal, onTime });

  async function get(asked: URL, { origin }: { origin?: string } = {}): Promise<Answer> {
    const chain = [asked.href];
    for (let url = asked; ;) {
      const answer = await once(url, asked);
      const location = header(answer.headers['location']);
      if (!REDIRECTS.has(answer.statusCode) || !location) {
        return {
          url,
          status: answer.statusCode,
          contentType: header(answer.headers['content-type']),
          contentEncoding: header(answer.headers['content-encoding']),
          body: answer.body,
          discard: () => drop(answer.body),
        };
      }
      drop(answer.body);
      if (!URL.canParse(location, url.href)) throw new Refused(asked.href, 'redirected to no valid URL');
      const next = new URL(location, url);
      next.hash = '';
      if (chain.includes(next.href))
        throw new Refused(asked.href, `redirect loop: ${[...chain, next.href].join(' → ').slice(0, 500)}`);
      if (chain.length > maxRedirects) throw new Refused(asked.href, `more than ${maxRedirects} redirects`);
      if (origin && next.origin !== origin)
        throw new Refused(asked.href, `redirected off the site's origin, to ${next.href.slice(0, 200)}`);
      chain.push(next.href);
      url = next;
    }
  }

  return {
    get,
    async close() {
      const settled = await Promise.allSettled(agents.values());
      await Promise.all(settled.map((s) => (s.status === 'fulfilled' ? s.value.destroy() : undefined)));
    },
  };
}
