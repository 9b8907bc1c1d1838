import { describe, expect, it } from 'vitest';
import { LocationListError, parseLocationList } from './locations.ts';

describe('parseLocationList', () => {
  it('reads names separated by commas, blanks around them ignored', () => {
    expect(parseLocationList('tokyo, london ,s_carolina')).toEqual(['tokyo', 'london', 's_carolina']);
  });

  it('names every unknown location at once, and the known ones', () => {
    expect(() => parseLocationList('tokyo,mars,venus')).toThrow(
      /^unknown location\(s\) mars, venus; known: s_carolina, /,
    );
    expect(() => parseLocationList('mars')).toThrow(LocationListError);
  });

  it('refuses a list that names nothing', () => {
    expect(() => parseLocationList(' , ')).toThrow(/no location given/);
  });
});
