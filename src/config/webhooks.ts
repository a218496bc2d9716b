/**
 * --webhook-url, --webhook-secret-file and --allow-loopback-webhooks (CONTRACT.md §20): checked
 * whole at start-up, each problem a one-line UsageError naming the flag (exit 2).
 */
import { readTokenFile } from './token-file.ts';
import { UsageError } from './flags.ts';
import { reachOf, webhookHostProblem, type WebhookResolver } from '../workspace/webhook-destination.ts';
import { readUrlOnce } from '../workspace/url-reading.ts';

export interface WebhookConfig {
  /** each URL as given (normalised by URL), in flag order */
  urls: readonly string[];
  /** the HMAC-SHA256 key of X-Agentd-Signature */
  secret: string;
  allowLoopback: boolean;
}

export interface WebhookFlags {
  urls: readonly string[];
  secretFile: string | null;
  allowLoopback: boolean;
}

export async function loadWebhookConfig(flags: WebhookFlags, resolve?: WebhookResolver): Promise<WebhookConfig | null> {
  if (flags.urls.length === 0) {
    if (flags.secretFile) throw new UsageError('--webhook-secret-file: only valid with --webhook-url');
    if (flags.allowLoopback) throw new UsageError('--allow-loopback-webhooks: only valid with --webhook-url');
    return null;
  }
  if (!flags.secretFile) throw new UsageError('--webhook-url: requires --webhook-secret-file (the key that signs each delivery)');
  const urls: string[] = [];
  for (const given of flags.urls) {
    const url = parseWebhookUrl(given);
    if (url.protocol === 'http:' && !flags.allowLoopback) throw new UsageError(`--webhook-url: ${url.origin} is plain http:, allowed only for a loopback receiver with --allow-loopback-webhooks (use https:)`);
    const problem = await webhookHostProblem(url, reachOf(url, flags.allowLoopback), resolve);
    if (problem) throw new UsageError(`--webhook-url: ${url.origin} may not receive webhooks: ${problem}`);
    if (urls.includes(url.href)) throw new UsageError(`--webhook-url: ${url.origin} is given more than once`);
    urls.push(url.href);
  }
  const secret = readTokenFile(flags.secretFile, { label: '--webhook-secret-file' });
  return Object.freeze({ urls: Object.freeze(urls), secret, allowLoopback: flags.allowLoopback });
}

/** An absolute http(s) URL without credentials or fragment; messages never repeat its path or query (they may hold a secret). */
function parseWebhookUrl(given: string): URL {
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new UsageError('--webhook-url: not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError(`--webhook-url: ${url.protocol} is not http: or https:`);
  if (url.username !== '' || url.password !== '') throw new UsageError(`--webhook-url: ${url.host} carries credentials; receivers check X-Agentd-Signature instead`);
  if (url.hash !== '') throw new UsageError(`--webhook-url: ${url.origin} has a fragment, which is never sent`);
  // Judged and delivered in one reading: node:http is handed this URL, as WHATWG read it.
  const reading = readUrlOnce(given, { query: true });
  if (reading.problem !== undefined) throw new UsageError(`--webhook-url: ${url.origin} is refused: ${reading.problem}`);
  return reading.url;
}
