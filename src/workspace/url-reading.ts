/**
 * One reading of a URL (CONTRACT.md §17, §20, §21): a repository or webhook URL is parsed once, by
 * the WHATWG parser (node's URL), judged in that form, and handed on as the normalised string that
 * was judged. What another reader (git and curl for a repository, node:http for a webhook) could
 * read differently is refused before anything is judged: a backslash (WHATWG reads it as `/` and
 * ends the host there, curl keeps it and reads on to an `@`), whitespace and control characters,
 * and an authority that is not plainly `[user@]host[:port]` — percent-encoding (WHATWG decodes a
 * host, curl does not), a second `@`, a `?` or `#` before the first `/`, anything outside
 * letters, digits, `.`, `-`, `_`, `~` and a bracketed IPv6 literal.
 */

const WHITESPACE_OR_CONTROL = /[\s\u0000-\u001f\u007f-\u009f]/u;
/** `[user@]host[:port]`, ASCII only: the one form every reader splits the same way. */
const PLAIN_AUTHORITY = /^(?:[A-Za-z0-9._~-]+@)?(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

export interface UrlReadingRules {
  /** whether `?query` may follow the path (a webhook's may; git appends its own path to a repository's) */
  query: boolean;
}

/** The URL as read once, or why it may not be read once. */
export type UrlReading = { url: URL; problem?: undefined } | { url?: undefined; problem: string };

/**
 * Reads `given` (an absolute `scheme://authority/...` URL) the one way it will be used. The
 * authority is taken as the text between `://` and the first `/` (the widest reading any consumer
 * makes) and must be plain; the result's `href` is what the consumer is to be given.
 */
export function readUrlOnce(given: string, rules: UrlReadingRules): UrlReading {
  if (WHITESPACE_OR_CONTROL.test(given)) return { problem: 'it contains whitespace or control characters' };
  if (given.includes('\\')) return { problem: 'it contains a backslash, which URL parsers read differently' };
  const start = given.indexOf('://');
  if (start < 0) return { problem: 'it is not an absolute scheme://host URL' };
  const rest = given.slice(start + 3);
  const slash = rest.indexOf('/');
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  if (!PLAIN_AUTHORITY.test(authority)) {
    return { problem: 'its host part is not plain [user@]host[:port] (percent-encoding, a second "@", "?" or "#" before the path, or other characters that URL parsers read differently)' };
  }
  if (!rules.query && given.includes('?')) return { problem: 'it has a query ("?"), which git would read as part of the path' };
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    return { problem: 'it is malformed' };
  }
  // (a plain authority always names a host, so the parsed URL has one)
  if (given.includes('#')) return { problem: 'it has a fragment ("#"), which is never sent' };
  return { url };
}
