/** The command-line flags of `agentd serve`: one table drives parsing, validation and --help. */

type FlagKind = 'string' | 'integer' | 'size' | 'boolean' | 'list';

export interface FlagDefinition {
  name: string;
  kind: FlagKind;
  help: string;
  /** the value when the flag is not given (config.ts reads it from here, --help shows it) */
  default?: number | string;
  /** integer flags: the range a given value must lie in (max: unbounded when absent) */
  min?: number;
  max?: number;
  /** what --help says of a default that is not a plain value (a path, a rule, 'off') */
  defaultText?: string;
}

export const SERVE_FLAGS: readonly FlagDefinition[] = [
  { name: 'host', kind: 'string', help: 'listening address', default: '127.0.0.1' },
  { name: 'port', kind: 'integer', help: 'listening port, 0 to 65535 (0 = any free port)', default: 4096, min: 0, max: 65535 },
  { name: 'allow-remote', kind: 'boolean', help: 'permit a non-loopback --host (requires a token)' },
  { name: 'token-file', kind: 'string', help: 'owner-only file holding the bearer token (or env SERVICE_TOKEN)' },
  { name: 'tenant-registry', kind: 'string', help: 'multi-tenant credential registry (JSON, mode 0600)' },
  { name: 'tenant-state-root', kind: 'string', help: 'server-owned tenant storage (with --tenant-registry)' },
  { name: 'sandbox-runner', kind: 'string', help: 'trusted sandbox runner program (docs/SANDBOX.md)' },
  { name: 'sandbox-runtime', kind: 'string', help: 'what confines the runner\'s commands: bubblewrap, or gvisor (gVisor\'s runsc, a user-space kernel; with --sandbox-runner; docs/SANDBOX.md)', default: 'bubblewrap' },
  { name: 'sandbox-disk-quota', kind: 'size', help: 'size of each tenant sandbox\'s file system: bytes, or K, M, G, T (powers of 1024); 0 = no disk or inode quota (docs/SANDBOX.md)', default: '10G', min: 8 * 1024 * 1024 },
  { name: 'sandbox-inode-quota', kind: 'integer', help: 'files and directories a tenant sandbox may hold (with a disk quota)', default: 1_000_000, min: 64, max: 4_000_000_000 },
  { name: 'yolo', kind: 'boolean', help: 'auto-approve tool_approval and root_access requests' },
  { name: 'no-project-instructions', kind: 'boolean', help: 'do not give the model the AGENTS.md files from the workspace root down to the session\'s cwd' },
  { name: 'cors-origin', kind: 'list', help: 'allowed browser origin, exact (repeatable)' },
  { name: 'workspace-root', kind: 'list', help: 'allowed workspace root (repeatable)', defaultText: 'current directory' },
  { name: 'max-concurrent-turns', kind: 'integer', help: 'global running turns', default: 3, min: 1 },
  { name: 'max-concurrent-turns-per-tenant', kind: 'integer', help: 'running turns per tenant', default: 2, min: 1 },
  { name: 'max-queued-turns', kind: 'integer', help: 'global queue size', default: 100, min: 1 },
  { name: 'max-queued-turns-per-tenant', kind: 'integer', help: 'queue size per tenant', default: 25, min: 1 },
  { name: 'max-active-tenants', kind: 'integer', help: 'active tenant runtimes', default: 16, min: 1 },
  { name: 'max-event-subscribers', kind: 'integer', help: 'global SSE connections', default: 256, min: 1 },
  { name: 'max-event-subscribers-per-tenant', kind: 'integer', help: 'SSE connections per tenant', default: 8, min: 1 },
  { name: 'event-replay-limit', kind: 'integer', help: 'events retained per access boundary', default: 1000, min: 1 },
  { name: 'maximum-request-bytes', kind: 'integer', help: 'maximum encoded request body', default: 33554432, min: 1 },
  { name: 'model-stall-timeout', kind: 'integer', help: 'seconds a model stream may stay silent before it is aborted and retried', default: 120, min: 1, max: 86_400 },
  { name: 'max-watches-per-tenant', kind: 'integer', help: 'host inotify watches a tenant\'s change receipts may hold (the process holds at most half of fs.inotify.max_user_watches); past them receipts walk the tree', default: 4096, min: 1, max: 10_000_000 },
  { name: 'revert-bytes-per-tenant', kind: 'size', help: 'earlier file contents a tenant keeps for reverts (K, M, G, T: powers of 1024), counted against its disk quota where one is set; past it the oldest turns\' are dropped (409 revert_unavailable); 0 keeps none', default: '1G' },
  { name: 'revert-history', kind: 'integer', help: 'latest turns of a session (those that ran a writing call) that POST /v1/turns/:id/revert can take back; 0 keeps none', default: 50, min: 0, max: 100_000 },
  { name: 'state-dir', kind: 'string', help: 'SQLite file and server state', defaultText: '$XDG_STATE_HOME/agentd or ~/.local/state/agentd' },
  { name: 'database-url', kind: 'string', help: 'postgres://… to use PostgreSQL instead of SQLite' },
  { name: 'cluster', kind: 'boolean', help: 'an instance of a cluster: several agentd on one PostgreSQL --database-url (docs/CLUSTER.md)' },
  { name: 'turn-lease-seconds', kind: 'integer', help: 'with --cluster: how long a turn\'s owner may go unheard before another instance takes the turn over', default: 10, min: 1, max: 3600 },
  { name: 'max-turn-takeovers', kind: 'integer', help: 'with --cluster: times a turn is taken over after its lease ran out (its instance died, froze or lost the database) before it ends failed instead: a turn that crashes every instance running it stops there; handovers on SIGTERM do not count', default: 5, min: 1, max: 1000 },
  { name: 'instance-id', kind: 'string', help: 'this instance\'s name, in /readyz and the logs', defaultText: 'host name, pid and a random suffix' },
  { name: 'models-file', kind: 'string', help: 'model catalog (JSON)', defaultText: '<state dir>/models.json if present' },
  { name: 'log-level', kind: 'string', help: 'fatal, error, warn, info, debug, trace or silent', default: 'info' },
  { name: 'metrics-port', kind: 'integer', help: 'serve Prometheus metrics at /metrics on this port, no token (0 = any free port)', min: 0, max: 65535, defaultText: 'off' },
  { name: 'metrics-host', kind: 'string', help: 'address of the metrics listener (with --metrics-port)', defaultText: 'the --host address' },
  { name: 'permissions-file', kind: 'string', help: 'operator rules allow, ask or deny per tool and pattern (JSON: {"rules": […]}, docs/TOOLS-AND-POLICY.md)' },
  { name: 'webhook-url', kind: 'list', help: 'POST turn.completed, turn.failed, turn.cancelled and request.created here, signed (repeatable; docs/WEBHOOKS.md)' },
  { name: 'webhook-secret-file', kind: 'string', help: 'owner-only file holding the webhooks\' HMAC secret (token-file rules; with --webhook-url)' },
  { name: 'allow-loopback-webhooks', kind: 'boolean', help: 'let --webhook-url name a loopback address (private ones stay refused)' },
  { name: 'mcp-config', kind: 'string', help: 'MCP tool servers (JSON: {"mcpServers": {…}}, docs/OPERATIONS.md)' },
];

const FLAGS_BY_NAME = new Map(SERVE_FLAGS.map((flag) => [flag.name, flag]));

/** The table's row of a flag (config.ts reads defaults and ranges through it). */
export function flagDefinition(name: string): FlagDefinition {
  const definition = FLAGS_BY_NAME.get(name);
  if (!definition) throw new Error(`no flag --${name} in SERVE_FLAGS`);
  return definition;
}

const SIZE_UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** `16M`, `10GiB`, `4096`: a byte count with an optional binary unit; null when it is not one. */
export function parseSize(text: string): number | null {
  const match = /^(\d+)\s*([KMGT]?)(?:i?B)?$/i.exec(text.trim());
  if (!match) return null;
  const bytes = Number(match[1]) * SIZE_UNITS[match[2].toUpperCase()];
  return Number.isSafeInteger(bytes) ? bytes : null;
}

/** The variable a flag is also read from (environment-flags.ts): `database-url` → `AGENTD_DATABASE_URL` */
export function environmentVariableOf(flagName: string): string {
  return `AGENTD_${flagName.toUpperCase().replaceAll('-', '_')}`;
}

function defaultTextOf(flag: FlagDefinition): string | undefined {
  return flag.defaultText ?? (flag.default === undefined ? undefined : String(flag.default));
}

export type RawFlags = Map<string, string | boolean | string[]>;

export class UsageError extends Error {}

/** Parses `--name value`, `--name=value` and bare boolean flags; unknown flags are errors. */
export function parseFlags(argv: readonly string[]): RawFlags {
  const flags: RawFlags = new Map();
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index];
    if (!argument.startsWith('--')) throw new UsageError(`unexpected argument: ${argument}`);
    const equals = argument.indexOf('=');
    const name = argument.slice(2, equals === -1 ? undefined : equals);
    const definition = FLAGS_BY_NAME.get(name);
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
    right: flag.help + (defaultTextOf(flag) ? ` (default: ${defaultTextOf(flag)})` : '') + ` [${environmentVariableOf(flag.name)}]`,
  }));
  // the widest option name sets the column, with two spaces to spare
  const width = Math.max(...rows.map((row) => row.left.length)) + 2;
  for (const row of rows) lines.push(row.left.padEnd(width) + row.right);
  lines.push('', 'Each option is also read from the variable in brackets when the command line does not give it: true or false for',
    'a switch, commas between the values of a repeatable option; an empty variable counts as unset.');
  lines.push('', 'Environment: SERVICE_TOKEN (bearer token), OPENAI_API_KEY, ANTHROPIC_API_KEY, OTEL_EXPORTER_OTLP_ENDPOINT (traces)');
  return lines.join('\n');
}
