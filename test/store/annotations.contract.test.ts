import { expect, it } from 'vitest';
import { describeOnBothStores } from './store-backends.ts';

// A project's annotations (AnnotationsStore).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('annotations', (store) => {
  it("keeps a project's annotations by date, in a range, and removes them with the project", async () => {
    const user = await store().createUser('annotator');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://notes.example/',
      domain: 'notes.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const at = (h: number) => new Date(Date.UTC(2026, 5, 1, h));
    await store().addAnnotation({
      projectId: project.id,
      date: at(12),
      text: 'deploy 2',
      link: 'https://git.example/pr/2',
    });
    await store().addAnnotation({ projectId: project.id, date: at(9), text: 'deploy 1', link: null });
    expect((await store().listAnnotations(project.id)).map((a) => [a.text, a.date, a.link])).toEqual([
      ['deploy 1', at(9), null],
      ['deploy 2', at(12), 'https://git.example/pr/2'],
    ]);
    expect((await store().listAnnotations(project.id, { from: at(10), to: at(13) })).map((a) => a.text)).toEqual([
      'deploy 2',
    ]);
    expect(await store().removeProject(user.id, project.url)).toBe(true);
    expect(await store().listAnnotations(project.id)).toEqual([]);
  });

  it('pages, counts and removes annotations; retention deletes the old ones and finished updates', async () => {
    const user = await store().createUser('pager');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://pages.example/',
      domain: 'pages.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const at = (h: number) => new Date(Date.UTC(2026, 5, 2, h));
    const added = [];
    for (const h of [1, 2, 3, 4, 5])
      added.push(await store().addAnnotation({ projectId: project.id, date: at(h), text: `n${h}`, link: null }));
    expect(await store().countAnnotations(project.id)).toBe(5);
    // The newest of the range, still in date order.
    expect((await store().listAnnotations(project.id, { limit: 2 })).map((a) => a.text)).toEqual(['n4', 'n5']);
    expect((await store().listAnnotations(project.id, { to: at(4), limit: 2 })).map((a) => a.text)).toEqual([
      'n2',
      'n3',
    ]);
    expect(await store().removeAnnotation(project.id, added[2]!.id)).toBe(true);
    expect(await store().removeAnnotation(project.id, added[2]!.id)).toBe(false);
    // Another project's id removes nothing.
    expect(await store().removeAnnotation('0'.repeat(24), added[0]!.id)).toBe(false);
    expect(await store().deleteAnnotationsBefore(at(3))).toBe(2);
    expect((await store().listAnnotations(project.id)).map((a) => a.text)).toEqual(['n4', 'n5']);

    const update = (id: string) =>
      store().createUpdate({
        id,
        userId: user.id,
        projectId: project.id,
        url: project.url,
        devices: ['mobile'],
        locations: ['london'],
        updateType: 'manual',
        runs: 1,
      });
    const finished = '7a1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f';
    const open = '7b1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f';
    await update(finished);
    await update(open);
    await store().setUpdateState(finished, { status: 'failed', reason: 'test' });
    // Only finished updates go, and only once past the date.
    expect(await store().deleteFinishedUpdatesBefore(new Date(Date.now() - 60_000))).toBe(0);
    expect(await store().deleteFinishedUpdatesBefore(new Date(Date.now() + 60_000))).toBeGreaterThanOrEqual(1);
    expect(await store().findUpdate(user.id, finished)).toBeNull();
    expect(await store().findUpdate(user.id, open)).not.toBeNull();
  });
});
