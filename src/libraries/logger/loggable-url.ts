/** What a log line says for text that does not parse as a URL (never the text itself: it may hold anything). */
export const UNPARSEABLE_URL = '[unparseable url]';

/**
 * A URL as a log line may show it: `scheme://host[:port]/path` at most. The userinfo (`user:password@`), the query
 * string and the fragment are left out, since a merchant's URL may carry a token in any of them; a URL without a
 * host (`mailto:…`) shows its scheme only.
 */
export function loggableUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return UNPARSEABLE_URL;
  }
  return url.host === '' ? `${url.protocol}[opaque]` : `${url.protocol}//${url.host}${url.pathname}`;
}
