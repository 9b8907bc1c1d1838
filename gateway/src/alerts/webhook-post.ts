import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { PERFWATCH_VERSION } from '@perfwatch/common';
import { approveWebhookTarget, type WebhookTargets } from './webhook-targets.ts';

/** How an attempt ended: a 2xx is delivered; anything else is a reason to try again. */
export type Attempt = { ok: true } | { ok: false; error: string };

const RESPONSE_LIMIT = 64 * 1024;

/** `work`, or the deadline's reason once it passes first. */
function beforeDeadline<T>(work: Promise<T>, deadline: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const late = () => reject(deadline.reason as Error);
    deadline.addEventListener('abort', late, { once: true });
    work.then(resolve, reject).finally(() => deadline.removeEventListener('abort', late));
  });
}

/** A lookup that answers every name with the one address the rules approved. */
export function pinnedLookup(approved: { address: string; family: 4 | 6 }): LookupFunction {
  return (_host, options, callback) => {
    if (options.all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [approved]);
    else callback(null, approved.address, approved.family);
  };
}

/**
 * Sends the POST through `lookup` and settles once with how it ended: the answer's status (its
 * body read up to a limit, then dropped), a network error, or `late` when the deadline cut it.
 */
function sendPost(
  url: URL,
  body: string,
  headers: Record<string, string>,
  { lookup, deadline, late }: { lookup: LookupFunction; deadline: AbortSignal; late: Attempt },
): Promise<Attempt> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (attempt: Attempt) => {
      if (!settled) resolve(attempt);
      settled = true;
    };
    const req = send(
      url,
      {
        method: 'POST',
        lookup,
        signal: deadline,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(body)),
          'User-Agent': `perfwatch-webhooks/${PERFWATCH_VERSION}`,
          ...headers,
        },
      },
      (res: IncomingMessage) => {
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          // Enough of an answer: its status is what counts.
          if (read > RESPONSE_LIMIT) res.destroy();
        });
        res.on('error', () => undefined);
        res.on('close', () => {
          if (!res.complete && deadline.aborted) return settle(late);
          const status = res.statusCode ?? 0;
          settle(status >= 200 && status < 300 ? { ok: true } : { ok: false, error: `HTTP ${status}` });
        });
      },
    );
    req.on('error', (error) => settle(deadline.aborted ? late : { ok: false, error: error.message.slice(0, 500) }));
    req.end(body);
  });
}

/**
 * Posts one body, all of it (resolving the host, connecting, sending, reading the answer) within
 * `deadlineMs`: a receiver that answers a byte at a time holds a sender no longer than that. The
 * host is resolved through the rules and the connection made to the address they approved (no
 * second lookup a rebinding name could answer differently); redirects are not followed, so a
 * receiver cannot send the delivery somewhere the rules refuse.
 */
export async function postWebhook(
  target: string,
  body: string,
  headers: Record<string, string>,
  { targets, deadlineMs }: { targets: WebhookTargets; deadlineMs: number },
): Promise<Attempt> {
  const url = new URL(target);
  const deadline = AbortSignal.timeout(deadlineMs);
  const late: Attempt = {
    ok: false,
    error: `no complete answer within ${deadlineMs} ms (WEBHOOK_DEADLINE_MS); the request was cut off`,
  };
  // Resolved (and judged) here, whether a name or an address literal (Node skips `lookup` for those).
  let approved: { address: string; family: 4 | 6 };
  try {
    approved = await beforeDeadline(approveWebhookTarget(targets, url), deadline);
  } catch (error) {
    return deadline.aborted ? late : { ok: false, error: (error as Error).message.slice(0, 500) };
  }
  return sendPost(url, body, headers, { lookup: pinnedLookup(approved), deadline, late });
}
