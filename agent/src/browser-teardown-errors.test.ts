import { describe, expect, it } from 'vitest';
import { isBrowserTeardownError } from './browser-teardown-errors.ts';

describe('isBrowserTeardownError', () => {
  it('recognises the rejections a killed Chrome leaves behind, and nothing else', () => {
    const named = (name: string, message: string) => Object.assign(new Error(message), { name });
    expect(
      isBrowserTeardownError(named('TargetCloseError', 'Protocol error (Target.setAutoAttach): Target closed')),
    ).toBe(true);
    expect(
      isBrowserTeardownError(
        named('ProtocolError', 'Protocol error (Page.navigate): Session closed. Most likely the page has been closed.'),
      ),
    ).toBe(true);
    // Lighthouse's own wrapping of a command the killed Chrome never answered.
    const wrapped = Object.assign(
      new Error('Protocol error (Page.navigate): Protocol error (Page.navigate): Target closed'),
      { protocolMethod: 'Page.navigate' },
    );
    expect(isBrowserTeardownError(wrapped)).toBe(true);
    expect(
      isBrowserTeardownError(
        Object.assign(new Error('Protocol error (Page.navigate): Cannot navigate to invalid URL'), {
          protocolMethod: 'Page.navigate',
        }),
      ),
    ).toBe(false);
    expect(isBrowserTeardownError(new Error('Target closed'))).toBe(false);
    expect(isBrowserTeardownError(named('TypeError', 'Cannot read properties of undefined'))).toBe(false);
    expect(isBrowserTeardownError(named('ProtocolError', 'Invalid parameters'))).toBe(false);
    expect(isBrowserTeardownError(null)).toBe(false);
    expect(isBrowserTeardownError('Target closed')).toBe(false);
  });
});
