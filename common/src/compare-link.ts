import { formatApiDateTime } from './dates.ts';
import type { Device, Location } from './ids.ts';

/**
 * What the dashboard's compare view shows: `/v1/compare`'s parameters, each side a snapshot's
 * date or `latest` (resolved when the view is opened, so a link with `latest` follows new
 * snapshots; one with dates always shows the same two).
 */
export interface CompareViewParams {
  /** The head side's project. */
  url: string;
  /** The base side's project; absent: `url`'s. */
  baseUrl?: string;
  from: Date | string;
  to: Date | string;
  device?: Device;
  location?: Location;
}

/**
 * The dashboard's compare view of two snapshots, as a stable link
 * (`<server>/#/compare?url=…&baseUrl=…&from=…&to=…&device=…&location=…`) that a commit status or
 * a pull request comment can point to. The parameters are `/v1/compare`'s, in this order, so
 * the same comparison always gives the same link; the dashboard reads them back by these names
 * (compare-view.js). The server's address may have a path (a gateway behind a proxy's prefix).
 */
export function compareViewLink(serverBaseUrl: string, params: CompareViewParams): string {
  const server = new URL(serverBaseUrl);
  if (!server.pathname.endsWith('/')) server.pathname += '/';
  const side = (value: Date | string) => (value instanceof Date ? formatApiDateTime(value) : value);
  const query = new URLSearchParams({ url: params.url });
  if (params.baseUrl !== undefined && params.baseUrl !== params.url) query.set('baseUrl', params.baseUrl);
  query.set('from', side(params.from));
  query.set('to', side(params.to));
  if (params.device) query.set('device', params.device);
  if (params.location) query.set('location', params.location);
  return `${server.origin}${server.pathname}#/compare?${query}`;
}
