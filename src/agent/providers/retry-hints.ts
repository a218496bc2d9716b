/**
 * How long a provider asked us to wait before retrying, read from its response headers.
 *
 * Precedence follows the official SDKs: `retry-after-ms`, then `retry-after` (seconds or an HTTP
 * date). Without either, the rate-limit reset headers of the adapter's provider are read (its
 * dialect's `rateLimits`: relative Go-style durations such as "6m0s", or absolute RFC 3339 times). When
 * some limit reports `remaining: 0`, the longest reset among those exhausted limits wins (that is
 * the one that blocks us); otherwise the shortest reset is used.
 */
import type { RateLimitHeaders } from './dialect-descriptor.ts';

export type HeaderSource =
  | Headers
  | Record<string, string | string[] | number | undefined | null>
  | null
  | undefined;


/** Milliseconds to wait before retrying, or null when the headers do not say. */
export function retryAfterMsFromHeaders(headers: HeaderSource, now: number = Date.now(), rateLimits: RateLimitHeaders | null = null): number | null {
  if (!headers) return null;
  const read = headerReader(headers);

  const explicitMs = parseNonNegativeNumber(read('retry-after-ms'));
  if (explicitMs !== null) return Math.round(explicitMs);

  const retryAfter = read('retry-after');
  if (retryAfter !== null) {
    const parsed = parseRetryAfter(retryAfter, now);
    if (parsed !== null) return parsed;
  }

  if (rateLimits === null) return null;
  const resets: LimitReset[] = rateLimits.limits.map((limit) => {
    const reset = read(rateLimits.resetHeader(limit)) ?? '';
    return {
      waitMs: rateLimits.resetFormat === 'go-duration' ? parseGoDuration(reset) : parseTimestampDelay(reset, now),
      remaining: parseNonNegativeNumber(read(rateLimits.remainingHeader(limit))),
    };
  });
  return pickReset(resets);
}

/** `retry-after` as delay-seconds (fractions allowed) or as an HTTP date. */
export function parseRetryAfter(value: string, now: number = Date.now()): number | null {
  const seconds = parseNonNegativeNumber(value);
  if (seconds !== null) return Math.round(seconds * 1000);
  return parseTimestampDelay(value, now);
}

/**
 * A Go `time.Duration` string such as "1h2m3.5s", "6m0s", "12ms", "250us" in milliseconds.
 * A bare number is taken as seconds. Negative or malformed values give null (Azure sends
 * placeholders like "-1").
 */
export function parseGoDuration(text: string): number | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const bareSeconds = parseNonNegativeNumber(trimmed);
  if (bareSeconds !== null) return Math.round(bareSeconds * 1000);

  const unitMs: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, 'µs': 0.001, ns: 0.000001 };
  const part = /(\d+(?:\.\d+)?|\.\d+)(ms|us|µs|ns|h|m|s)/y;
  let total = 0;
  let position = 0;
  while (position < trimmed.length) {
    part.lastIndex = position;
    const match = part.exec(trimmed);
    if (!match) return null;
    total += Number(match[1]) * unitMs[match[2]];
    position = part.lastIndex;
  }
  return Math.round(total);
}

interface LimitReset {
  waitMs: number | null;
  remaining: number | null;
}

function pickReset(resets: LimitReset[]): number | null {
  const known = resets.filter((reset): reset is { waitMs: number; remaining: number | null } => reset.waitMs !== null);
  if (known.length === 0) return null;
  const exhausted = known.filter((reset) => reset.remaining === 0);
  if (exhausted.length > 0) return Math.max(...exhausted.map((reset) => reset.waitMs));
  return Math.min(...known.map((reset) => reset.waitMs));
}

function parseTimestampDelay(value: string, now: number): number | null {
  const trimmed = value.trim();
  if (trimmed === '') return null;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.round(at - now));
}

function parseNonNegativeNumber(value: string | null): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (!/^(\d+(\.\d+)?|\.\d+)$/.test(trimmed)) return null;
  return Number(trimmed);
}

function headerReader(headers: Exclude<HeaderSource, null | undefined>): (name: string) => string | null {
  if (typeof (headers as Headers).get === 'function' && typeof (headers as Headers).has === 'function') {
    const webHeaders = headers as Headers;
    return (name) => webHeaders.get(name);
  }
  const lowerCased = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || value === null) continue;
    lowerCased.set(name.toLowerCase(), Array.isArray(value) ? value.join(', ') : String(value));
  }
  return (name) => lowerCased.get(name) ?? null;
}
