/**
 * A request's URL as the log keeps it. Tokens travel in the Authorization header only, but a
 * client may still put one in a URL (`?token=…`, a pasted `pw_…`); logs outlive requests and
 * reach people who must not see them. So the values of parameters named like secrets, and
 * anything shaped like a perfwatch token or webhook secret, are replaced before the URL is logged.
 */
// `code`: the authorization code an OpenID provider sends to single sign-on's callback.
const SECRET_NAME = /token|auth|secret|passw|session|cookie|key|signature|^code$/i;
const SECRET_VALUE = /\b(?:pw|pwhs)_[A-Za-z0-9_-]{8,}/g;
const REDACTED = '[redacted]';

export function loggedUrl(url: string): string {
  const queryAt = url.indexOf('?');
  const path = (queryAt === -1 ? url : url.slice(0, queryAt)).replace(SECRET_VALUE, REDACTED);
  if (queryAt === -1) return path;
  const query = url
    .slice(queryAt + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // A name that does not decode is logged as it came, its value still checked below.
      }
      if (eq !== -1 && SECRET_NAME.test(decoded)) return `${name}=${REDACTED}`;
      return pair.replace(SECRET_VALUE, REDACTED);
    })
    .join('&');
  return `${path}?${query}`;
}
