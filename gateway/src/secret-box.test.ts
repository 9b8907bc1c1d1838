import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox } from './secret-box.ts';

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

  it('refuses to work without a key, and a key that is not 32 bytes', () => {
    expect(createSecretBox({}).ready).toBe(false);
    expect(() => createSecretBox({}).seal('x', 'p')).toThrow(/no PERFWATCH_SECRETS_KEY/);
    expect(() => createSecretBox({ key: 'c2hvcnQ=' })).toThrow(/32 random bytes/);
  });
});
