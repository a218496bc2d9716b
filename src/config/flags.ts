/** The command-line flags of `agentd serve`: one table drives parsing, validation and --help. */

export type FlagKind = 'string' | 'integer' | 'boolean' | 'list';

export interface FlagDefinition {
  name: string;
  kind: FlagKind;
  help: string;
  defaultText?: string;
}

export const SERVE_FLAGS: readonly FlagDefinition[] = [
  { name: 'host', kind: 'string', help: 'listening address', defaultText: '127.0.0.1' },
  { name: 'port', kind: 'integer', help: 'listening port, 0 to 65535 (0 = any free port)', defaultText: '4096' },
  { name: 'allow-remote', kind: 'boolean', help: 'permit a non-loopback --host (requires a token)' },
  { name: 'token-file', kind: 'string', help: 'owner-only file holding the bearer token (or env SERVICE_TOKEN)' },
  { name: 'tenant-registry', kind: 'string', help: 'multi-tenant credential registry (JSON, mode 0600)' },
  { name: 'tenant-state-root', kind: 'string', help: 'server-owned tenant storage (with --tenant-registry)' },
  { name: 'sandbox-runner', kind: 'string', help: 'trusted sandbox runner program (docs/SANDBOX.md)' },
  { name: 'yolo', kind: 'boolean', help: 'auto-approve tool_approval and root_access requests' },
  { name: 'cors-origin', kind: 'list', help: 'allowed browser origin, exact (repeatable)' },
  { name: 'workspace-root', kind: 'list', help: 'allowed workspace root (repeatable)', defaultText: 'current directory' },
  { name: 'max-concurrent-turns', kind: 'integer', help: 'global running turns', defaultText: '3' },
  { name: 'max-concurrent-turns-per-tenant', kind: 'integer', help: 'running turns per tenant', defaultText: '2' },
  { name: 'max-queued-turns', kind: 'integer', help: 'global queue size', defaultText: '100' },
  { name: 'max-queued-turns-per-tenant', kind: 'integer', help: 'queue size per tenant', defaultText: '25' },
  { name: 'max-active-tenants', kind: 'integer', help: 'active tenant runtimes', defaultText: '16' },
  { name: 'max-event-subscribers', kind: 'integer', help: 'global SSE connections', defaultText: '256' },
  { name: 'max-event-subscribers-per-tenant', kind: 'integer', help: 'SSE connections per tenant', defaultText: '8' },
  { name: 'event-replay-limit', kind: 'integer', help: 'events retained per access boundary', defaultText: '1000' },
  { name: 'maximum-request-bytes', kind: 'integer', help: 'maximum encoded request body', defaultText: '33554432' },
  { name: 'model-stall-timeout', kind: 'integer', help: 'seconds a model stream may stay silent before it is aborted and retried', defaultText: '120' },
  { name: 'state-dir', kind: 'string', help: 'SQLite file and server state', defaultText: '$XDG_STATE_HOME/agentd or ~/.local/state/agentd' },
  { name: 'database-url', kind: 'string', help: 'postgres://… to use PostgreSQL instead of SQLite' },
  { name: 'models-file', kind: 'string', help: 'model catalog (JSON)', defaultText: '<state dir>/models.json if present' },
  { name: 'log-level', kind: 'string', help: 'fatal, error, warn, info, debug, trace or silent', defaultText: 'info' },
  { name: 'metrics-port', kind: 'integer', help: 'serve Prometheus metrics at /metrics on this port, no token (0 = any free port)', defaultText: 'off' },
  { name: 'metrics-host', kind: 'string', help: 'address of the metrics listener (with --metrics-port)', defaultText: 'the --host address' },
  { name: 'mcp-config', kind: 'string', help: 'MCP tool servers (JSON: {"mcpServers": {…}}, docs/OPERATIONS.md)' },
];

export type RawFlags = Map<string, string | boolean | string[]>;

export class UsageError extends Error {}

/** Parses `--name value`, `--name=value` and bare boolean flags; unknown flags are errors. */
export function parseFlags(argv: readonly string[]): RawFlags {
  const byName = new Map(SERVE_FLAGS.map((flag) => [flag.name, flag]));
  const flags: RawFlags = new Map();
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index];
    if (!argument.startsWith('--')) throw new UsageError(`unexpected argument: ${argument}`);
    const equals = argument.indexOf('=');
    const name = argument.slice(2, equals === -1 ? undefined : equals);
    const definition = byName.get(name);
    if (!definition) throw new UsageError(`--${name}: unknown option`);
    let value: string | undefined = equals === -1 ? undefined : argument.slice(equals + 1);
    if (definition.kind === 'boolean') {
      if (value !== undefined && value !== 'true' && value !== 'false') {
        throw new UsageError(`--${name}: expected true or false, got "${value}"`);
      }
      flags.set(name, value !== 'false');
      continue;
    }
    if (value === undefined) {
      value = argv[++index];
      if (value === undefined) throw new UsageError(`--${name}: missing value`);
    }
    if (definition.kind === 'list') {
      const list = (flags.get(name) as string[] | undefined) ?? [];
      list.push(value);
      flags.set(name, list);
    } else {
      if (flags.has(name)) throw new UsageError(`--${name}: given more than once`);
      flags.set(name, value);
    }
  }
  return flags;
}

export function formatServeHelp(): string {
  const lines = ['Usage: agentd serve [options]', '', 'Options:'];
  const rows = SERVE_FLAGS.map((flag) => ({
    left: `  --${flag.name}${flag.kind === 'boolean' ? '' : ' <value>'}`,
    right: flag.help + (flag.defaultText ? ` (default: ${flag.defaultText})` : ''),
  }));
  // the widest option name sets the column, with two spaces to spare
  const width = Math.max(...rows.map((row) => row.left.length)) + 2;
  for (const row of rows) lines.push(row.left.padEnd(width) + row.right);
  lines.push('', 'Environment: SERVICE_TOKEN (bearer token), OPENAI_API_KEY, ANTHROPIC_API_KEY, OTEL_EXPORTER_OTLP_ENDPOINT (traces)');
  return lines.join('\n');
}
