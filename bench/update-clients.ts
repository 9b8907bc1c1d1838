/**
 * Sync updates asked from a thread of their own, as clients on other machines would: the bench
 * process also runs the stand-in agents, and answers its busy thread reads late stay in progress
 * in the gateway, which then holds their results the longer.
 */
import { get as httpGet } from 'node:http';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

export interface Answer {
  status: number;
  body: string;
}

/**
 * A sync update over node:http: fetch (undici) gives up on a response whose headers take over
 * 300 s, and the largest level's last answers take longer than that to be stored.
 */
function get(url: string, token: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { headers: { Authorization: token }, agent: false }, (res) => {
      // A thousand answers of a megabyte each are counted, neither kept nor decoded; a refusal's body is kept.
      let body = '';
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.byteLength;
        if (res.statusCode !== 200) body += chunk.toString('utf8');
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: res.statusCode === 200 ? `${bytes} bytes` : body }),
      );
    });
    req.on('error', reject);
  });
}

/** Asks every URL at once from a worker thread; resolves with their answers in order. */
export function askAll(urls: readonly string[], token: string): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { urls, token } });
    worker.once('message', (answers: Answer[]) => resolve(answers));
    worker.once('error', reject);
  });
}

if (!isMainThread && parentPort) {
  const { urls, token } = workerData as { urls: string[]; token: string };
  parentPort.postMessage(await Promise.all(urls.map((url) => get(url, token))));
}
