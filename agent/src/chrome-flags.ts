/**
 * Chrome flags for an agent. Headless; off the background network (component updates,
 * sync, safe-browsing lists), because agents run on locked-down networks and those
 * connections only add noise to the measurement.
 */
export const BASE_CHROME_FLAGS = [
  '--headless=new',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
  '--no-first-run',
  '--no-default-browser-check',
  '--mute-audio',
] as const;

/** Chrome refuses to start its sandbox as root; containers running as root need this. */
export function chromeFlags({ noSandbox, extra = [] }: { noSandbox: boolean; extra?: readonly string[] }): string[] {
  return [...BASE_CHROME_FLAGS, ...(noSandbox ? ['--no-sandbox'] : []), ...extra];
}
