// For the CLI's tests only (client/tsconfig.json leaves it out of the package's build).
import { main } from './client-cli.ts';

/** `perfwatch …` against a gateway that answers every request with `answer`; what it was asked and printed. */
export async function perfwatch(answer: unknown, ...argv: string[]) {
  const bodies: unknown[] = [];
  let out = '';
  let err = '';
  const fetch = async (_url: string | URL | Request, init?: RequestInit) => {
    bodies.push(JSON.parse(String(init?.body)));
    return new Response(JSON.stringify(answer), { headers: { 'content-type': 'application/json' } });
  };
  const code = await main(
    [...argv, '--server', 'http://gateway.test', '--token', 'pw_x'],
    {},
    {
      out: { write: (text: string) => (out += text) },
      err: { write: (text: string) => (err += text) },
      fetch,
    },
  );
  return { code, bodies, out, err };
}
