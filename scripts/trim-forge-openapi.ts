/**
 * Trims a forge's published OpenAPI document to the operations perfwatch calls, so the stand-in
 * (test/support/forge-standin.ts) can check requests and answers against the forge's own words:
 *
 *   node scripts/trim-forge-openapi.ts github FULL.json --repository github/rest-api-description \
 *     --path descriptions/api.github.com/api.github.com.json --version '@octokit/openapi@23.0.2'
 *   node scripts/trim-forge-openapi.ts gitlab FULL.yaml --repository gitlabhq/gitlabhq \
 *     --path doc/api/openapi/openapi_v3.yaml --version 045bf8777ea893e770b49d420febaeb7bf89e24a
 *
 * Writes test/fixtures/forges/<forge>-openapi.json: the document's `info` and `security`, the listed
 * operations, every component they reference (transitively), and `x-perfwatch-trimmed-from`.
 * Examples are dropped (documentation only, and most of the size), as is Octokit's `x-octokit`.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** The operations perfwatch's forge reports use, as `method path` in each document's own spelling. */
export const FORGE_OPERATIONS = {
  github: [
    'post /repos/{owner}/{repo}/statuses/{sha}',
    'get /repos/{owner}/{repo}/issues/{issue_number}/comments',
    'post /repos/{owner}/{repo}/issues/{issue_number}/comments',
    'patch /repos/{owner}/{repo}/issues/comments/{comment_id}',
    'get /repos/{owner}/{repo}/commits/{commit_sha}/pulls',
  ],
  gitlab: [
    'post /api/v4/projects/{id}/statuses/{sha}',
    'get /api/v4/projects/{id}/merge_requests/{noteable_id}/notes',
    'post /api/v4/projects/{id}/merge_requests/{noteable_id}/notes',
    'put /api/v4/projects/{id}/merge_requests/{noteable_id}/notes/{note_id}',
    'get /api/v4/projects/{id}/repository/commits/{sha}/merge_requests',
  ],
} as const;
type Forge = keyof typeof FORGE_OPERATIONS;

/**
 * Where a document contradicts the forge's own reference pages, the page wins, and the change says
 * so in `x-perfwatch-source`. GitLab's generator declares list endpoints' 200 as one entity (it
 * drops Grape's `is_array`); doc/api/notes.md "List all merge request notes" answers a list.
 */
const CORRECTIONS: Record<Forge, Array<(paths: JsonObject) => void>> = {
  github: [],
  gitlab: [
    (paths) => {
      const ok = at(paths, ['/api/v4/projects/{id}/merge_requests/{noteable_id}/notes', 'get', 'responses', '200']);
      const media = at(ok, ['content', 'application/json']);
      if (isObject(media['schema']) && media['schema']['type'] === 'array') return;
      media['schema'] = { type: 'array', items: media['schema'] ?? {} };
      ok['x-perfwatch-source'] =
        'doc/api/notes.md, "List all merge request notes" ("Gets a list of all notes"): an array of the ' +
        'entity; openapi_v3.yaml declares the single APIEntitiesNote (its generator omits is_array).';
    },
  ],
};

const DROPPED_KEYS = new Set(['examples', 'example', 'x-octokit']);
const COMPONENT_REF = /^#\/components\/([^/]+)\/(.+)$/;

function at(value: Json | undefined, keys: string[]): JsonObject {
  let current = value;
  for (const key of keys) current = isObject(current) ? current[key] : undefined;
  if (!isObject(current)) throw new Error(`the document has no ${keys.join(' → ')}`);
  return current;
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A deep copy without documentation-only keys. */
function stripped(value: Json): Json {
  if (Array.isArray(value)) return value.map(stripped);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !DROPPED_KEYS.has(key))
      .map(([key, inner]) => [key, stripped(inner)]),
  );
}

function refsIn(value: Json, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const inner of value) refsIn(inner, found);
  else if (isObject(value))
    for (const [key, inner] of Object.entries(value))
      if (key === '$ref' && typeof inner === 'string') found.push(inner);
      else refsIn(inner, found);
  return found;
}

function securitySchemesIn(operations: Json[]): string[] {
  return operations.flatMap((operation) =>
    (isObject(operation) && Array.isArray(operation['security']) ? operation['security'] : []).flatMap((requirement) =>
      isObject(requirement) ? Object.keys(requirement) : [],
    ),
  );
}

/** The components `roots` reference, followed through components, in the document's own order. */
function referencedComponents(document: JsonObject, roots: Json[]): JsonObject {
  const all = at(document, ['components']);
  const wanted = new Set<string>();
  const queue = roots.flatMap((root) => refsIn(root));
  for (const scheme of securitySchemesIn([document, ...roots])) queue.push(`#/components/securitySchemes/${scheme}`);
  while (queue.length > 0) {
    const ref = queue.pop() ?? '';
    const match = COMPONENT_REF.exec(ref);
    if (!match) throw new Error(`${ref} is not a reference this script follows`);
    if (wanted.has(ref)) continue;
    wanted.add(ref);
    const [, kind = '', name = ''] = match;
    const component = isObject(all[kind]) ? all[kind][name] : undefined;
    if (component === undefined) throw new Error(`${ref} is referenced but not in the document`);
    queue.push(...refsIn(stripped(component)));
  }
  const kept: JsonObject = {};
  for (const [kind, members] of Object.entries(all)) {
    if (!isObject(members)) continue;
    const names = Object.keys(members).filter((name) => wanted.has(`#/components/${kind}/${name}`));
    if (names.length > 0) kept[kind] = Object.fromEntries(names.map((name) => [name, stripped(members[name] ?? null)]));
  }
  return kept;
}

export function trimForgeDocument(
  forge: Forge,
  full: Record<string, unknown>,
  source: Record<string, string>,
): JsonObject {
  // Parsed JSON or YAML: JSON values all the way down.
  const document = full as JsonObject;
  const allPaths = at(document, ['paths']);
  const paths: JsonObject = {};
  for (const operation of FORGE_OPERATIONS[forge]) {
    const [method = '', path = ''] = operation.split(' ');
    const item = at(allPaths, [path]);
    const kept = isObject(paths[path]) ? paths[path] : {};
    // Path-level parameters apply to every method of the path.
    if (item['parameters'] !== undefined) kept['parameters'] = stripped(item['parameters']);
    kept[method] = stripped(at(item, [method]));
    paths[path] = kept;
  }
  for (const correct of CORRECTIONS[forge]) correct(paths);
  const operations = Object.values(paths).flatMap((item) => (isObject(item) ? Object.values(item) : []));
  return {
    openapi: document['openapi'] ?? null,
    info: stripped(document['info'] ?? null),
    ...(document['servers'] === undefined ? {} : { servers: document['servers'] }),
    ...(document['security'] === undefined ? {} : { security: document['security'] }),
    'x-perfwatch-trimmed-from': { ...source, operations: [...FORGE_OPERATIONS[forge]], dropped: [...DROPPED_KEYS] },
    paths,
    components: referencedComponents(document, [paths, ...operations]),
  };
}

const argsSchema = z.object({
  forge: z.enum(['github', 'gitlab']),
  input: z.string().min(1),
  repository: z.string().min(1),
  path: z.string().min(1),
  version: z.string().min(1),
  note: z.string().min(1).optional(),
});

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      repository: { type: 'string' },
      path: { type: 'string' },
      version: { type: 'string' },
      note: { type: 'string' },
    },
  });
  const args = argsSchema.safeParse({ ...values, forge: positionals[0], input: positionals[1] });
  if (!args.success) {
    console.error(
      'usage: node scripts/trim-forge-openapi.ts github|gitlab FULL-DOCUMENT --repository R --path P --version V [--note N]',
    );
    process.exit(2);
  }
  const { forge, input, ...source } = args.data;
  const text = await readFile(input, 'utf8');
  const parsed: unknown = input.endsWith('.json') ? JSON.parse(text) : parseYaml(text, { maxAliasCount: -1 });
  const document = z.record(z.string(), z.unknown()).parse(parsed);
  const trimmed = trimForgeDocument(forge, document, source);
  const out = join(import.meta.dirname, '..', 'test', 'fixtures', 'forges', `${forge}-openapi.json`);
  await writeFile(out, `${JSON.stringify(trimmed, null, 1)}\n`);
  console.log(`${out}: ${Object.keys(at(trimmed, ['paths'])).length} paths`);
}

if (import.meta.main) await main();
