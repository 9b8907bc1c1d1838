import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configurationDoc, DOC_PATH, PROGRAMS, SETTING_GROUPS } from '../../scripts/configuration-doc.ts';

// docs/configuration.md is generated from the settings schemas; this is what keeps it so.
describe('docs/configuration.md', () => {
  it('is what the settings schemas generate', () => {
    const committed = readFileSync(DOC_PATH, 'utf8');
    expect(
      committed === configurationDoc(),
      'docs/configuration.md differs from the settings schemas: run `npm run docs:config` and commit the result',
    ).toBe(true);
  });

  it('declares every setting once: in one group, with a description', () => {
    const declared = SETTING_GROUPS.flatMap((group) => Object.keys(group.settings));
    expect(declared.filter((name, i) => declared.indexOf(name) !== i)).toEqual([]);
    for (const group of SETTING_GROUPS)
      for (const [name, schema] of Object.entries(group.settings))
        expect(schema.description, `${name} has no description`).toBeTruthy();
    for (const { short, settings } of PROGRAMS)
      for (const name of Object.keys(settings.schema.shape))
        expect(declared, `${short} reads ${name}, which no group declares`).toContain(name);
  });

  it('gives each old name a new one that the same program reads', () => {
    for (const { settings } of PROGRAMS)
      for (const name of Object.values(settings.aliases ?? {}))
        expect(Object.keys(settings.schema.shape)).toContain(name);
  });
});
