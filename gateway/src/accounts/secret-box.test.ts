import { createCipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox, SecretKeyError } from './secret-box.ts';

const key = () => randomBytes(32).toString('base64');

describe('secret box', () => {
  it('seals with AES-GCM under the current key and opens only for the same owner, unaltered', () => {
    const box = createSecretBox({ key: key() });
    const sealed = box.seal('{"cookies":[{"name":"session","value":"s3cr3t"}]}', 'project-a');
    expect(sealed).not.toContain('s3cr3t');
    expect(sealed).toMatch(/^pwsec1\.[0-9a-f]{8}\./);
    expect(box.open(sealed, 'project-a')).toContain('s3cr3t');
    // A fresh IV each time: the same secret never seals the same way twice.
    expect(box.seal('same', 'p')).not.toBe(box.seal('same', 'p'));
    expect(() => box.open(sealed, 'project-b')).toThrow(/integrity/);
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0]! ^= 1;
    expect(() => box.open([...parts.slice(0, 3), body.toString('base64url')].join('.'), 'project-a')).toThrow(
      /integrity/,
    );
  });

  it('opens what the previous key sealed during a rotation, and says which values need resealing', () => {
    const [oldKey, newKey] = [key(), key()];
    const sealedOld = createSecretBox({ key: oldKey }).seal('secret', 'p');
    const rotating = createSecretBox({ key: newKey, previous: oldKey });
    expect(rotating.open(sealedOld, 'p')).toBe('secret');
    expect(rotating.isCurrent(sealedOld)).toBe(false);
    expect(rotating.isCurrent(rotating.seal('secret', 'p'))).toBe(true);
    expect(() => createSecretBox({ key: newKey }).open(sealedOld, 'p')).toThrow(
      /neither PERFWATCH_SECRETS_KEY nor PERFWATCH_SECRETS_KEY_PREVIOUS/,
    );
  });

  it('refuses a value whose tag is shorter than 16 bytes, though the tag is right for its key and owner', () => {
    const raw = randomBytes(32);
    const box = createSecretBox({ key: raw.toString('base64') });
    const [prefix, keyId] = box.seal('x', 'p').split('.');
    // A 4-byte tag over an empty secret: what a forger without the key finds in 2^32 tries.
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', raw, iv, { authTagLength: 4 });
    cipher.setAAD(Buffer.from('p'));
    const body = Buffer.concat([cipher.update(''), cipher.final(), cipher.getAuthTag()]);
    const short = [prefix, keyId, iv.toString('base64url'), body.toString('base64url')].join('.');
    expect(() => box.open(short, 'p')).toThrow(/not a sealed secret/);
    // A whole value cut short by a byte fails too, whatever its length.
    const sealed = box.seal('a longer secret', 'p').split('.');
    const cut = Buffer.from(sealed[3]!, 'base64url').subarray(0, -1).toString('base64url');
    expect(() => box.open([...sealed.slice(0, 3), cut].join('.'), 'p')).toThrow(SecretKeyError);
  });

  it('refuses to work without a key, and a key that is not 32 bytes', () => {
    expect(createSecretBox({}).ready).toBe(false);
    expect(() => createSecretBox({}).seal('x', 'p')).toThrow(/no PERFWATCH_SECRETS_KEY/);
    expect(() => createSecretBox({ key: 'c2hvcnQ=' })).toThrow(/32 random bytes/);
  });
});
