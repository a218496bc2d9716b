import type { McpServerConfig } from '../config/mcp-config.ts';

const REDACTED = '[redacted]';
const MAX_LOGGED_MESSAGE = 300;

/**
 * The configured values that may be credentials: env values, header values, and the URL's user,
 * password and query. Anything logged about a server passes through `redact` with them.
 */
export function secretsOf(config: McpServerConfig): string[] {
  const values = config.kind === 'stdio' ? Object.values(config.env) : Object.values(config.headers);
  if (config.kind === 'http') {
    const url = new URL(config.url);
    values.push(url.username, url.password, url.search.slice(1), ...url.searchParams.values());
  }
  // short values ("1", "true") would blank out ordinary words and protect nothing
  return values.filter((value) => value.length >= 4).sort((a, b) => b.length - a.length);
}

/** An error as one bounded log line, with every configured secret replaced. */
export function redact(error: unknown, secrets: readonly string[]): string {
  let message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  for (const secret of secrets) message = message.split(secret).join(REDACTED);
  message = message.replace(/\s+/g, ' ').trim();
  return message.length > MAX_LOGGED_MESSAGE ? message.slice(0, MAX_LOGGED_MESSAGE) + '…' : message;
}
