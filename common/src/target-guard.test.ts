import { describe, expect, it } from 'vitest';
import { createTargetGuard, isAllowedAddress, parseAllowList, TargetRefused } from './target-guard.ts';

describe('target guard', () => {
  it('allows public unicast and refuses every internal range', () => {
    for (const ok of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111'])
      expect(isAllowedAddress(ok, []), ok).toBe(true);
    const internal = [
      '127.0.0.1',
      '127.1.2.3',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      '::a00:1',
      '::7f00:1',
      '::808:808',
      new URL('http://[::127.0.0.1]/').hostname.slice(1, -1),
    ];
    for (const bad of internal) expect(isAllowedAddress(bad, []), bad).toBe(false);
  });

  it('lets an allow-list open chosen ranges and nothing more', () => {
    const allow = parseAllowList('127.0.0.0/8, 10.1.2.3');
    expect(isAllowedAddress('127.0.0.1', allow)).toBe(true);
    expect(isAllowedAddress('10.1.2.3', allow)).toBe(true);
    expect(isAllowedAddress('10.1.2.4', allow)).toBe(false);
    expect(isAllowedAddress('169.254.169.254', allow)).toBe(false);
  });

  it('checks what a name resolves to, every address of it', async () => {
    const names: Record<string, Array<{ address: string; family: number }>> = {
      'public.example': [{ address: '93.184.216.34', family: 4 }],
      'sneaky.example': [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.7', family: 4 },
      ],
      'metadata.example': [{ address: '169.254.169.254', family: 4 }],
    };
    const guard = createTargetGuard({
      resolveHost: async (host) =>
        names[host] ?? Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' })),
    });
    expect(await guard.resolve('public.example')).toEqual({ address: '93.184.216.34', family: 4 });
    // The refusal reaches users: it names no address they did not give (the error keeps them for the log).
    const sneaky = (await guard.resolve('sneaky.example').then(
      () => expect.unreachable('sneaky.example was let through'),
      (error: unknown) => error,
    )) as TargetRefused;
    expect(sneaky.message).toMatch(/sneaky\.example: it resolves to an address that is not a public address/);
    expect(sneaky.message).not.toContain('10.0.0.7');
    expect(sneaky.addresses).toEqual(['10.0.0.7']);
    await expect(guard.resolve('10.0.0.7')).rejects.toThrow(/10\.0\.0\.7 is not a public address/);
    const failing = createTargetGuard({
      resolveHost: () => Promise.reject(new Error('getaddrinfo EAI_AGAIN via dns1.corp.internal')),
    });
    await expect(failing.resolve('x.example')).rejects.toThrow(/does not resolve \(lookup failed\)$/);
    await expect(guard.resolve('metadata.example')).rejects.toBeInstanceOf(TargetRefused);
    await expect(guard.resolve('nowhere.example')).rejects.toThrow(/does not resolve \(ENOTFOUND\)/);
    await expect(guard.resolve('[::1]')).rejects.toBeInstanceOf(TargetRefused);
    await expect(guard.resolve('127.0.0.1')).rejects.toBeInstanceOf(TargetRefused);
  });
});
