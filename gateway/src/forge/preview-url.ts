import { normalizeProjectUrl, type Revision } from '@perfwatch/common';

/** What fills a preview URL template: unknown values leave the template unfillable. */
export interface PreviewValues {
  pullRequest?: number | undefined;
  branch?: string | undefined;
  sha?: string | undefined;
}

/** A branch as a DNS label can hold it: lower-case letters, digits and `-` (`feature/Login` → `feature-login`). */
const dnsSafe = (branch: string): string =>
  branch
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63);

/**
 * The template with its placeholders filled, or the name of the first placeholder this event
 * has no value for. `{branch}` is made DNS-safe, since previews are usually named by host.
 */
export function fillPreviewTemplate(template: string, values: PreviewValues): { url: string } | { missing: string } {
  const filled: Record<string, string | undefined> = {
    pullRequest: values.pullRequest === undefined ? undefined : String(values.pullRequest),
    branch: values.branch === undefined ? undefined : dnsSafe(values.branch) || undefined,
    sha: values.sha,
  };
  const missing = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).find((name) => filled[name] === undefined);
  if (missing !== undefined) return { missing };
  return { url: template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(filled[name]!)) };
}

/**
 * The page to measure: the preview's origin (scheme, host, port, and a base path if it has one)
 * followed by the linked project's path and query, so a preview of `https://shop.example/cart?x=1`
 * at `https://pr-7.preview.example` is `https://pr-7.preview.example/cart?x=1`. null when the
 * origin is not an http(s) URL without credentials.
 */
export function previewPageUrl(origin: string, projectUrl: string): string | null {
  const base = URL.parse(origin);
  const page = URL.parse(projectUrl);
  if (!base || !page || (base.protocol !== 'https:' && base.protocol !== 'http:')) return null;
  if (base.username !== '' || base.password !== '') return null;
  const basePath = base.pathname.replace(/\/+$/, '');
  return normalizeProjectUrl(`${base.origin}${basePath}${page.pathname}${page.search}`);
}

/** The values a template is filled with, from an event's revision. */
export const previewValuesOf = (revision: Revision): PreviewValues => ({
  pullRequest: revision.pullRequest,
  branch: revision.branch,
  sha: revision.commit,
});
