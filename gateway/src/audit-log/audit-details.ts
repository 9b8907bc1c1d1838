import type { AuditDetails } from '@perfwatch/common';

/**
 * What an entry says of the settings a change gave: each as it was given, a list as its items
 * joined by commas. Settings hold no secret (credentials have an endpoint of their own).
 */
export function settingDetails(settings: object): AuditDetails {
  const details: AuditDetails = {};
  for (const [name, value] of Object.entries(settings)) {
    if (value === undefined) continue;
    details[name] = Array.isArray(value)
      ? value.join(',')
      : typeof value === 'object' && value !== null
        ? JSON.stringify(value)
        : (value as string | number | boolean | null);
  }
  return details;
}

/**
 * The host of a URL an entry names, and only its host: a webhook's URL may carry its secret in
 * its path or query (a Slack incoming webhook's does).
 */
export const hostOf = (url: string): string => URL.parse(url)?.host ?? '';
