import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (a project's cookies, headers and login steps): AES-256-GCM under a key the
 * gateway and `perfwatch admin` read from PERFWATCH_SECRETS_KEY (32 random bytes, base64), with
 * a fresh 96-bit IV per seal, a full 128-bit tag, and its owner as associated data (a project's
 * id and URL, project-auth.ts), so a sealed value copied to another project, or left on a
 * project whose URL was changed, does not open. A sealed value names its key (the first 8 hex digits of the
 * key's SHA-256), so values sealed under the previous key still open during a rotation
 * (PERFWATCH_SECRETS_KEY_PREVIOUS) until `perfwatch admin rotate-secrets-key` reseals them.
 * node:crypto does this whole; no library would add anything but a dependency.
 */
const PREFIX = 'pwsec1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyError';
  }
}

interface Key {
  id: string;
  bytes: Buffer;
}

function keyFrom(text: string, name: string): Key {
  const bytes = Buffer.from(text.trim(), 'base64');
  if (bytes.length !== 32)
    throw new SecretKeyError(`${name} must be 32 random bytes in base64 (openssl rand -base64 32)`);
  return { id: createHash('sha256').update(bytes).digest('hex').slice(0, 8), bytes };
}

export interface SecretBox {
  /** Whether a key is configured: without one nothing can be sealed or opened. */
  readonly ready: boolean;
  seal(plaintext: string, owner: string): string;
  open(sealed: string, owner: string): string;
  /** Whether a sealed value is under the current key (false: rotate-secrets-key reseals it). */
  isCurrent(sealed: string): boolean;
}

export function createSecretBox({
  key,
  previous,
}: {
  key?: string | undefined;
  previous?: string | undefined;
}): SecretBox {
  const current = key ? keyFrom(key, 'PERFWATCH_SECRETS_KEY') : null;
  const older = previous ? keyFrom(previous, 'PERFWATCH_SECRETS_KEY_PREVIOUS') : null;
  const missing = () =>
    new SecretKeyError(
      'no PERFWATCH_SECRETS_KEY: set one (openssl rand -base64 32) to keep credentials for pages behind a login',
    );
  return {
    ready: current !== null,
    seal(plaintext, owner) {
      if (!current) throw missing();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current.bytes, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(owner));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return [PREFIX, current.id, iv.toString('base64url'), body.toString('base64url')].join('.');
    },
    open(sealed, owner) {
      const [prefix, keyId, iv, body] = sealed.split('.');
      if (prefix !== PREFIX || !keyId || !iv || !body) throw new SecretKeyError('not a sealed secret');
      const key = [current, older].find((k) => k?.id === keyId);
      if (!key)
        throw current
          ? new SecretKeyError(
              `sealed under key ${keyId}, which is neither PERFWATCH_SECRETS_KEY nor PERFWATCH_SECRETS_KEY_PREVIOUS`,
            )
          : missing();
      const data = Buffer.from(body, 'base64url');
      const nonce = Buffer.from(iv, 'base64url');
      // A tag shorter than the 16 bytes every seal writes would take fewer guesses to forge:
      // anything shorter is not a sealed value, and the decipher is told the length it checks.
      if (nonce.length !== IV_BYTES || data.length < TAG_BYTES) throw new SecretKeyError('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key.bytes, nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(owner));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      try {
        return Buffer.concat([decipher.update(data.subarray(0, data.length - TAG_BYTES)), decipher.final()]).toString(
          'utf8',
        );
      } catch {
        throw new SecretKeyError('a sealed secret failed its integrity check (altered, or sealed for another project)');
      }
    },
    isCurrent(sealed) {
      return current !== null && sealed.split('.')[1] === current.id;
    },
  };
}
