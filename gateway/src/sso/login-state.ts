import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { z } from 'zod';

/**
 * What a sign-in must find again at the callback (state, nonce, PKCE verifier, where to go
 * after), kept in the browser that started it: sealed (AES-256-GCM under a key derived from the
 * client secret, so every replica opens it and nobody else can read or make one), HttpOnly, for
 * ten minutes. Nothing is kept on the server for a sign-in that is never finished.
 */
export const LOGIN_TTL_MS = 10 * 60_000;

const loginStateSchema = z.object({
  state: z.string().min(1),
  nonce: z.string().min(1),
  verifier: z.string().min(1),
  returnTo: z.string(),
  expiresAt: z.number().int(),
});
export type LoginState = z.infer<typeof loginStateSchema>;

export interface LoginSeal {
  seal(state: LoginState): string;
  /** The state; null when it was not sealed here, was changed, or has expired. */
  open(sealed: string | undefined, now: Date): LoginState | null;
}

export function loginSeal(clientSecret: string): LoginSeal {
  const key = Buffer.from(hkdfSync('sha256', clientSecret, '', 'perfwatch sso login state', 32));
  return {
    seal(state) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const sealed = Buffer.concat([cipher.update(JSON.stringify(state), 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
    },
    open(sealed, now) {
      if (!sealed) return null;
      try {
        const bytes = Buffer.from(sealed, 'base64url');
        const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12));
        decipher.setAuthTag(bytes.subarray(12, 28));
        const text = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
        const state = loginStateSchema.parse(JSON.parse(text));
        return state.expiresAt > now.getTime() ? state : null;
      } catch {
        return null;
      }
    },
  };
}
