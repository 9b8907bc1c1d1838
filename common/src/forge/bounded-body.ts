/**
 * The first bytes of an answer's body, read as they stream in and the rest left unread: a forge
 * is a user's input (a link's API URL), and one that streams without end must not fill memory.
 * `more` says whether the body went on past `maxBytes` (the bytes then hold at least that many).
 */
export async function readUpTo(response: Response, maxBytes: number): Promise<{ text: string; more: boolean }> {
  if (!response.body) return { text: '', more: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: Buffer.concat(chunks).toString('utf8'), more: false };
    chunks.push(value);
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return { text: Buffer.concat(chunks).toString('utf8'), more: true };
    }
  }
}
