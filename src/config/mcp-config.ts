import { UsageError } from './flags.ts';
import { readJsonConfigFile } from './json-config-file.ts';

/** A server agentd starts as a child process and talks to over stdin/stdout. */
interface McpStdioServer {
  kind: 'stdio';
  name: string;
  command: string;
  args: string[];
  /** added to a minimal environment (PATH, HOME, USER, …): agentd's own secrets are not passed on */
  env: Record<string, string>;
}

/** A server reached over streamable HTTP. */
interface McpHttpServer {
  kind: 'http';
  name: string;
  url: string;
  /** e.g. an Authorization header; never logged */
  headers: Record<string, string>;
}

export type McpServerConfig = McpStdioServer | McpHttpServer;

/**
 * A server's name becomes part of every tool name (`mcp__<server>__<tool>`), which providers
 * restrict to letters, digits, `_` and `-`; `__` is the separator, so a name may not contain it.
 */
const SERVER_NAME = /^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/;
const MAX_SERVER_NAME = 32;

const STDIO_FIELDS = new Set(['type', 'command', 'args', 'env']);
const HTTP_FIELDS = new Set(['type', 'url', 'headers']);

/**
 * Reads and validates --mcp-config: `{"mcpServers": {NAME: {"command", "args", "env"} | {"url",
 * "headers"}}}`. Throws UsageError naming the file and the field; values are never quoted, since
 * env and headers hold credentials.
 */
export function loadMcpConfig(file: string): McpServerConfig[] {
  const fail = (message: string): never => {
    throw new UsageError(`--mcp-config ${file}: ${message}`);
  };
  const document = readJsonConfigFile(file, fail);
  if (!isObject(document)) return fail('must be a JSON object with an "mcpServers" object');
  for (const key of Object.keys(document)) if (key !== 'mcpServers') fail(`${key}: unknown field (expected only "mcpServers")`);
  const servers = document.mcpServers;
  if (!isObject(servers)) return fail('mcpServers: must be an object of named servers');
  return Object.entries(servers).map(([name, entry]) => parseServer(name, entry, fail));
}

function parseServer(name: string, entry: unknown, fail: (message: string) => never): McpServerConfig {
  const at = `mcpServers.${name}`;
  if (!SERVER_NAME.test(name) || name.length > MAX_SERVER_NAME) {
    fail(`${at}: a server name is 1 to ${MAX_SERVER_NAME} letters, digits, "-" or single "_"`);
  }
  if (!isObject(entry)) return fail(`${at}: must be an object with "command" or "url"`);
  const hasCommand = 'command' in entry;
  const hasUrl = 'url' in entry;
  if (hasCommand === hasUrl) return fail(`${at}: give exactly one of "command" (stdio) or "url" (streamable HTTP)`);
  const allowed = hasCommand ? STDIO_FIELDS : HTTP_FIELDS;
  for (const key of Object.keys(entry)) if (!allowed.has(key)) fail(`${at}.${key}: unknown field for a ${hasCommand ? 'stdio' : 'streamable HTTP'} server`);
  const type = entry.type;
  if (type !== undefined && type !== (hasCommand ? 'stdio' : 'http') && !(hasUrl && type === 'streamable-http')) {
    fail(`${at}.type: must be ${hasCommand ? '"stdio"' : '"http" or "streamable-http"'} for this entry`);
  }

  if (hasCommand) {
    if (typeof entry.command !== 'string' || entry.command.trim() === '') return fail(`${at}.command: must be a non-empty string`);
    const args = entry.args ?? [];
    if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) return fail(`${at}.args: must be an array of strings`);
    return { kind: 'stdio', name, command: entry.command, args, env: stringRecord(entry.env, `${at}.env`, fail) };
  }
  if (typeof entry.url !== 'string') return fail(`${at}.url: must be a string`);
  let url: URL;
  try {
    url = new URL(entry.url);
  } catch {
    return fail(`${at}.url: not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`${at}.url: must be an http:// or https:// URL`);
  return { kind: 'http', name, url: entry.url, headers: stringRecord(entry.headers, `${at}.headers`, fail) };
}

function stringRecord(value: unknown, at: string, fail: (message: string) => never): Record<string, string> {
  if (value === undefined) return {};
  if (!isObject(value)) return fail(`${at}: must be an object of strings`);
  for (const [key, item] of Object.entries(value)) if (typeof item !== 'string') fail(`${at}.${key}: must be a string`);
  return { ...(value as Record<string, string>) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
