/**
 * Chrome flags for an agent. Headless; off the background network (component updates,
 * sync, safe-browsing lists), because agents run on locked-down networks and those
 * connections only add noise to the measurement.
 */
const BASE_CHROME_FLAGS = [
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
  // WebRTC sends UDP (STUN, media) around any proxy, and so around the target guard: only
  // proxied UDP is allowed, which an HTTP proxy never carries, so a page reaches no address
  // over WebRTC.
  // (Chromium 156 honours --webrtc-ip-handling-policy; --force-webrtc-ip-handling-policy lets
  // STUN through, measured by test/e2e/page-escape.test.ts.)
  '--webrtc-ip-handling-policy=disable_non_proxied_udp',
] as const;

/** Chrome refuses to start its sandbox as root; containers running as root need this. */
export function chromeFlags({ noSandbox, extra = [] }: { noSandbox: boolean; extra?: readonly string[] }): string[] {
  return [...BASE_CHROME_FLAGS, ...(noSandbox ? ['--no-sandbox'] : []), ...extra];
}
