import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import {
  artifactSegments,
  isArtifactId,
  isArtifactName,
  snapshotSegments,
  type ArtifactKey,
  type ArtifactStore,
  type PutOptions,
  type StoredArtifact,
} from './artifact-store.ts';
import { boundedBody } from './bounded-body.ts';

/**
 * Artifacts as files under one directory: `<org>/<project>/<snapshot>/<device>-<location>-<kind>`,
 * each with a `.meta.json` beside it (its content type and encoding). A write goes to a file
 * under `.incoming/` and is renamed into place, so a reader sees the whole artifact or none;
 * the data file's mtime is its write time, what retention reads.
 */
export function createFsArtifactStore({ dir }: { dir: string }): ArtifactStore {
  const incoming = join(dir, '.incoming');
  const pathOf = (key: ArtifactKey) => join(dir, ...artifactSegments(key));

  return {
    async put(key, body, options) {
      const path = pathOf(key);
      await mkdir(incoming, { recursive: true });
      const temp = join(incoming, randomBytes(12).toString('hex'));
      try {
        const bytes = await writeSynced(temp, body, options.maxBytes);
        // The meta first: the data file's rename is what makes the artifact visible.
        await writeFile(`${temp}.meta`, JSON.stringify(metaOf(options)));
        await renameInto(`${temp}.meta`, `${path}${META}`);
        await renameInto(temp, path);
        return { bytes };
      } catch (error) {
        await rm(temp, { force: true });
        await rm(`${temp}.meta`, { force: true });
        throw error;
      }
    },
    async get(key) {
      return readArtifact(pathOf(key));
    },
    async removeSnapshot(orgId, projectId, snapshotId) {
      await rm(join(dir, ...snapshotSegments(orgId, projectId, snapshotId)), { recursive: true, force: true });
    },
    async removeOlderThan(cutoff) {
      await removeStaleIncoming(incoming, cutoff);
      return removeOldArtifacts(dir, cutoff);
    },
  };
}

const META = '.meta.json';

const metaSchema = z.object({ contentType: z.string(), contentEncoding: z.string().optional() });

function metaOf({ contentType, contentEncoding }: PutOptions): z.infer<typeof metaSchema> {
  return { contentType, ...(contentEncoding ? { contentEncoding } : {}) };
}

/** The body into `path`, bounded, synced to disk before it is renamed into place (no empty file after a crash). */
async function writeSynced(path: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<number> {
  const counted = boundedBody(body, maxBytes);
  const handle = await open(path, 'wx');
  try {
    for await (const chunk of counted) await handle.write(chunk);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return counted.bytes();
}

/** Renamed into its directory, made again if retention removed it as empty a moment before. */
async function renameInto(from: string, to: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await mkdir(dirname(to), { recursive: true });
    try {
      return await rename(from, to);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 3) throw error;
    }
  }
}

async function readArtifact(path: string): Promise<StoredArtifact | null> {
  // The data file is opened first: once open, its bytes stay readable even if retention removes it.
  const handle = await open(path, 'r').catch(missingAsNull);
  if (!handle) return null;
  try {
    const meta = metaSchema.safeParse(
      JSON.parse((await readFile(`${path}${META}`, 'utf8').catch(missingAsNull)) ?? 'null'),
    );
    if (!meta.success) {
      await handle.close();
      return null;
    }
    const { size } = await handle.stat();
    return {
      body: handle.createReadStream(),
      bytes: size,
      contentType: meta.data.contentType,
      ...(meta.data.contentEncoding ? { contentEncoding: meta.data.contentEncoding } : {}),
    };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

function missingAsNull(error: NodeJS.ErrnoException): null {
  if (error.code === 'ENOENT') return null;
  throw error;
}

/** Writes a crashed gateway left behind, past the same cutoff. */
async function removeStaleIncoming(incoming: string, cutoff: Date): Promise<void> {
  for (const name of await readdir(incoming).catch(() => [] as string[])) {
    const path = join(incoming, name);
    const stats = await stat(path).catch(() => null);
    // recursive: a directory there (never the gateway's own) would otherwise fail every pass.
    if (stats && stats.mtime < cutoff) await rm(path, { force: true, recursive: true });
  }
}

/**
 * Walks org/project/snapshot, removes data files (and their meta) older than `cutoff`, then emptied
 * directories. Only what is named as an artifact: ARTIFACT_DIR may be a directory that holds more.
 */
async function removeOldArtifacts(dir: string, cutoff: Date): Promise<number> {
  let removed = 0;
  for (const snapshotDir of await snapshotDirs(dir)) {
    for (const name of await readdir(snapshotDir).catch(() => [] as string[])) {
      if (!isArtifactName(name)) continue;
      const path = join(snapshotDir, name);
      const stats = await stat(path).catch(() => null);
      if (!stats || stats.mtime >= cutoff) continue;
      await unlink(path).catch(missingAsNull);
      await rm(`${path}${META}`, { force: true });
      removed++;
    }
    await removeEmpty(snapshotDir, dir);
  }
  return removed;
}

async function snapshotDirs(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const org of await subdirs(dir))
    for (const project of await subdirs(org)) found.push(...(await subdirs(project)));
  return found;
}

/** Directories named as ids (never `.incoming`); a symbolic link is not followed (isDirectory is the link's own type). */
async function subdirs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isDirectory() && isArtifactId(entry.name)).map((e) => join(dir, e.name));
}

/** The directory and its parents up to (not including) `root`, while empty; a write making one again is left alone. */
async function removeEmpty(path: string, root: string): Promise<void> {
  for (let current = path; current !== root && current.startsWith(root); current = join(current, '..')) {
    const gone = await rmdir(current).then(
      () => true,
      () => false,
    );
    if (!gone) return;
  }
}
