import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { filmstripOf, filmstripOfJson } from './filmstrip.ts';

const PICTURE = 'data:image/jpeg;base64,/9j/4AAQSkZJRg==';

/** A real result with the filmstrip the agent keeps (the fixtures were captured without one). */
function withFrames(items: unknown[]) {
  const lhr = loadLhr('mobile', 1);
  lhr.audits['screenshot-thumbnails'] = {
    ...lhr.audits['screenshot-thumbnails']!,
    details: { type: 'filmstrip', items },
  };
  return lhr;
}

describe('filmstripOf', () => {
  it("gives a real result's frames, timing and picture, in order", () => {
    const items = [
      { timing: 300, timestamp: 1, data: PICTURE },
      { timing: 600, timestamp: 2, data: PICTURE },
    ];
    expect(filmstripOf(withFrames(items))).toEqual([
      { timing: 300, data: PICTURE },
      { timing: 600, data: PICTURE },
    ]);
  });

  it('leaves out a frame of another shape, not the strip', () => {
    expect(
      filmstripOf(
        withFrames([
          { timing: 'soon', data: PICTURE },
          { timing: 900, data: PICTURE },
        ]),
      ),
    ).toEqual([{ timing: 900, data: PICTURE }]);
  });

  it('is null for a result without frames: as stored without screenshots, or not a result at all', () => {
    expect(filmstripOf(loadLhr('mobile', 1))).toBeNull();
    expect(filmstripOf(withFrames([]))).toBeNull();
    expect(filmstripOf({ audits: {} })).toBeNull();
    expect(filmstripOf('not a result')).toBeNull();
  });

  it("reads the same frames off a stored result's JSON, and none off bytes that are no result", () => {
    const lhr = withFrames([{ timing: 300, data: PICTURE }]);
    const json = Buffer.from(JSON.stringify(lhr));
    expect(filmstripOfJson(json)).toEqual(filmstripOf(lhr));
    expect(filmstripOfJson(Buffer.from(JSON.stringify(loadLhr('desktop', 2))))).toBeNull();
    expect(filmstripOfJson(Buffer.from('{"audits": [1'))).toBeNull();
  });
});
