import { randomBytes } from 'node:crypto';
import { homedir, hostname } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { flagDefinition, parseFlags, parseSize, UsageError, type RawFlags } from './flags.ts';
import { readTokenFile, validateToken } from './token-file.ts';
import type { TenantRegistry } from './tenant-registry.ts';
import { sandboxRunnerFileProblem } from './sandbox-runner-file.ts';
import { SANDBOX_RUNTIMES, type SandboxRuntimeName } from './sandbox-runtimes.ts';
import { loadMcpConfig, type McpServerConfig } from './mcp-config.ts';
import { secretExposedBy, serverSecrets } from './server-secrets.ts';
import { loadPermissionsFile, type PermissionRule } from './permissions-file.ts';
import { loadWebhookConfig, type WebhookConfig } from './webhooks.ts';
import { addEnvironmentFlags, nameTheVariable } from './environment-flags.ts';

export interface Limits {
  maxConcurrentTurns: number;
  maxConcurrentTurnsPerTenant: number;
  maxQueuedTurns: number;
  maxQueuedTurnsPerTenant: number;
  maxActiveTenants: number;
  maxEventSubscribers: number;
  maxEventSubscribersPerTenant: number;
  eventReplayLimit: number;
  maximumRequestBytes: number;
  /** --model-stall-timeout in milliseconds */
  modelStallTimeoutMs: number;
  /** --revert-history: the latest turns of a session whose earlier file contents are kept */
  revertHistory: number;
  /** --max-watches-per-tenant: host inotify watches one boundary's change receipts may hold */
  maxWatchesPerTenant: number;
  /** --revert-bytes-per-tenant: the bytes of revert content one boundary keeps at most */
  revertBytesPerTenant: number;
}

export interface SandboxQuota {
  bytes: number;
  inodes: number;
}

export interface Config {
  host: string;
  port: number;
  allowRemote: boolean;
  /** The single-user bearer token, or null in loopback mode without authentication. */
  token: string | null;
  /** --token-file as given, so that tools can be kept from reading it */
  tokenFile: string | null;
  tenantRegistry: string | null;
  /** The validated registry when --tenant-registry is given (multi-tenant mode). */
  tenants: TenantRegistry | null;
  /** With a registry: the given root, else `<state dir>/tenants`. */
  tenantStateRoot: string | null;
  sandboxRunner: string | null;
  /** --sandbox-runtime: what confines the runner's commands (its runners get it as AGENTD_SANDBOX_RUNTIME) */
  sandboxRuntime: SandboxRuntimeName;
  /** each tenant sandbox's file system (--sandbox-disk-quota, --sandbox-inode-quota); null when turned off (0) */
  sandboxQuota: SandboxQuota | null;
  yolo: boolean;
  /** false with --no-project-instructions: AGENTS.md files are not read */
  projectInstructions: boolean;
  corsOrigins: string[];
  /** As given (absolute); canonicalised by the workspace layer at start-up. */
  workspaceRoots: string[];
  limits: Limits;
  stateDir: string;
  databaseUrl: string | null;
  /** --cluster: one of several agentd on the PostgreSQL database (CONTRACT.md §18) */
  cluster: boolean;
  /** --instance-id, else host name, pid and a random suffix */
  instanceId: string;
  /** --turn-lease-seconds (used with --cluster) */
  turnLeaseSeconds: number;
  /** --max-turn-takeovers (used with --cluster) */
  maxTurnTakeovers: number;
  modelsFile: string | null;
  /** True when --models-file was not given and the state-dir default is used (absent is fine). */
  modelsFileIsDefault: boolean;
  logLevel: string;
  /** --metrics-port, null when metrics are off */
  metricsPort: number | null;
  /** --metrics-host, else the API's --host */
  metricsHost: string;
  /** --mcp-config as given, so that tools can be kept from reading it */
  mcpConfig: string | null;
  /** the servers of --mcp-config, empty without it */
  mcpServers: McpServerConfig[];
  /** --permissions-file as given, so that tools can be kept from reading or patching it */
  permissionsFile: string | null;
  /** the rules of --permissions-file, in file order (the last match wins), empty without it */
  permissionRules: readonly PermissionRule[];
  /** --webhook-url with its secret (docs/WEBHOOKS.md); null without */
  webhooks: WebhookConfig | null;
  /** --webhook-secret-file as given, so that tools can be kept from reading it */
  webhookSecretFile: string | null;
}

const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host.toLowerCase()) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Turns `agentd serve` arguments and the environment into one validated, immutable Config.
 * Throws UsageError with a one-line message naming the option on any problem.
 * Reads SERVICE_TOKEN from `env`; the caller removes it from the process environment.
 * Asynchronous only because the tenant registry's checker (TypeBox, ≈ 0.2–0.35 s to import) loads
 * with --tenant-registry, never on a single-user start-up.
 */
export async function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Config> {
  const flags = parseFlags(argv);
  const fromEnvironment = addEnvironmentFlags(flags, env);
  try {
    return await configFrom(flags, env, cwd);
  } catch (error) {
    throw nameTheVariable(error, fromEnvironment);
  }
}

/** The flags, those the environment gave included, validated into one Config. */
async function configFrom(flags: RawFlags, env: NodeJS.ProcessEnv, cwd: string): Promise<Config> {
  const text = (name: string) => flags.get(name) as string | undefined;

  const host = text('host') ?? stringDefault('host');
  if (host.trim() === '') throw new UsageError('--host: must not be empty');
  const port = integerFlag(flags, 'port');
  const allowRemote = flags.get('allow-remote') === true;

  const limits: Limits = {
    maxConcurrentTurns: integerFlag(flags, 'max-concurrent-turns'),
    maxConcurrentTurnsPerTenant: 0,
    maxQueuedTurns: integerFlag(flags, 'max-queued-turns'),
    maxQueuedTurnsPerTenant: 0,
    maxActiveTenants: integerFlag(flags, 'max-active-tenants'),
    maxEventSubscribers: integerFlag(flags, 'max-event-subscribers'),
    maxEventSubscribersPerTenant: 0,
    eventReplayLimit: integerFlag(flags, 'event-replay-limit'),
    maximumRequestBytes: integerFlag(flags, 'maximum-request-bytes'),
    modelStallTimeoutMs: integerFlag(flags, 'model-stall-timeout') * 1000,
    revertHistory: integerFlag(flags, 'revert-history'),
    maxWatchesPerTenant: integerFlag(flags, 'max-watches-per-tenant'),
    revertBytesPerTenant: sizeFlag(flags, 'revert-bytes-per-tenant'),
  };
  limits.maxConcurrentTurnsPerTenant = perTenantFlag(flags, 'max-concurrent-turns-per-tenant', limits.maxConcurrentTurns, 'max-concurrent-turns');
  limits.maxQueuedTurnsPerTenant = perTenantFlag(flags, 'max-queued-turns-per-tenant', limits.maxQueuedTurns, 'max-queued-turns');
  limits.maxEventSubscribersPerTenant = perTenantFlag(flags, 'max-event-subscribers-per-tenant', limits.maxEventSubscribers, 'max-event-subscribers');

  const tenantRegistry = pathFlag(flags, 'tenant-registry', cwd);
  const tenantStateRoot = pathFlag(flags, 'tenant-state-root', cwd);
  const sandboxRunner = pathFlag(flags, 'sandbox-runner', cwd);
  const sandboxRuntime = text('sandbox-runtime') ?? stringDefault('sandbox-runtime');
  if (!(SANDBOX_RUNTIMES as readonly string[]).includes(sandboxRuntime)) throw new UsageError(`--sandbox-runtime: must be one of ${SANDBOX_RUNTIMES.join(', ')}`);
  if (flags.has('sandbox-runtime') && !sandboxRunner) throw new UsageError('--sandbox-runtime: only valid with --sandbox-runner');
  if (!tenantRegistry && flags.has('tenant-state-root')) throw new UsageError('--tenant-state-root: only valid with --tenant-registry');

  const tokenFile = pathFlag(flags, 'token-file', cwd);
  const envToken = env.SERVICE_TOKEN;
  if (tenantRegistry) {
    if (tokenFile || envToken !== undefined) {
      throw new UsageError('--tenant-registry: single-user tokens (SERVICE_TOKEN, --token-file) cannot be combined with a tenant registry');
    }
    if (flags.has('workspace-root')) throw new UsageError('--workspace-root: cannot be combined with --tenant-registry (each tenant has its workspaceRoot)');
  }
  if (tokenFile && envToken !== undefined) {
    throw new UsageError('--token-file: give exactly one token source, not both --token-file and SERVICE_TOKEN');
  }
  let token: string | null = null;
  if (tokenFile) token = readTokenFile(tokenFile);
  else if (envToken !== undefined) token = validateToken(envToken.trim(), 'SERVICE_TOKEN');

  if (!isLoopbackHost(host)) {
    if (!allowRemote) throw new UsageError(`--host: ${host} is not a loopback address; pass --allow-remote to bind it`);
    if (!token && !tenantRegistry) throw new UsageError('--allow-remote: a non-loopback bind requires a token (SERVICE_TOKEN or --token-file) or --tenant-registry');
  }

  const databaseUrl = text('database-url') ?? null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new UsageError('--database-url: must start with postgres:// or postgresql://');
  }
  if (tenantRegistry && !databaseUrl) throw new UsageError('--tenant-registry: requires --database-url');
  const cluster = flags.get('cluster') === true;
  if (cluster && !databaseUrl) throw new UsageError('--cluster: requires a PostgreSQL --database-url (SQLite cannot cluster)');
  const instanceId = text('instance-id') ?? `${hostname() || 'agentd'}-${process.pid}-${randomBytes(3).toString('hex')}`;
  if (!INSTANCE_ID.test(instanceId)) throw new UsageError('--instance-id: 1 to 128 letters, digits and . _ : @ -, starting with a letter or digit');

  const logLevel = text('log-level') ?? stringDefault('log-level');
  if (!LOG_LEVELS.includes(logLevel)) throw new UsageError(`--log-level: must be one of ${LOG_LEVELS.join(', ')}`);

  const stateDir = pathFlag(flags, 'state-dir', cwd) ?? defaultStateDir(env);
  const effectiveTenantStateRoot = tenantRegistry ? (tenantStateRoot ?? join(stateDir, 'tenants')) : null;
  const explicitModelsFile = pathFlag(flags, 'models-file', cwd);
  const modelsFile = explicitModelsFile ?? join(stateDir, 'models.json');
  const mcpConfig = pathFlag(flags, 'mcp-config', cwd);
  const permissionsFile = pathFlag(flags, 'permissions-file', cwd);
  const webhookSecretFile = pathFlag(flags, 'webhook-secret-file', cwd);
  const otherServerFiles = [
    { name: 'the models file', path: modelsFile },
    ...(mcpConfig ? [{ name: 'the MCP config', path: mcpConfig }] : []),
    ...(permissionsFile ? [{ name: 'the permissions file', path: permissionsFile }] : []),
    ...(webhookSecretFile ? [{ name: 'the webhook secret file', path: webhookSecretFile }] : []),
  ];
  const tenants = tenantRegistry
    ? (await import('./tenant-registry.ts')).loadTenantRegistry(tenantRegistry, { stateDir, tenantStateRoot: effectiveTenantStateRoot!, serverUid: process.getuid?.() ?? 0, otherServerFiles })
    : null;
  const workspaceRoots = ((flags.get('workspace-root') as string[] | undefined) ?? (tenants ? [] : [cwd])).map((root) => {
    if (root.trim() === '') throw new UsageError('--workspace-root: must not be empty');
    return resolve(cwd, root);
  });

  const webhooks = await loadWebhookConfig({
    urls: (flags.get('webhook-url') as string[] | undefined) ?? [],
    secretFile: webhookSecretFile,
    allowLoopback: flags.get('allow-loopback-webhooks') === true,
  });
  if (sandboxRunner) {
    const problem = sandboxRunnerFileProblem(sandboxRunner, tenants ? tenants.tenants.map((tenant) => tenant.workspaceRoot) : workspaceRoots);
    if (problem) throw new UsageError(`--sandbox-runner: ${problem}`);
    // A tenant's root was checked against the server's files with the registry; the one boundary's here.
    const secrets = serverSecrets({ stateDir, tokenFile, modelsFile, mcpConfig, permissionsFile, tenantRegistry, tenantStateRoot: effectiveTenantStateRoot, webhookSecretFile });
    const exposed = tenants ? null : secretExposedBy(workspaceRoots[0], secrets);
    if (exposed) throw new UsageError(`--sandbox-runner: ${exposed}`);
  }

  const metricsPort = flags.has('metrics-port') ? integerFlag(flags, 'metrics-port') : null;
  const metricsHost = text('metrics-host') ?? host;
  if (metricsPort === null && flags.has('metrics-host')) throw new UsageError('--metrics-host: only valid with --metrics-port');
  if (metricsHost.trim() === '') throw new UsageError('--metrics-host: must not be empty');
  // the metrics answer without a token, so the rule for exposing them is the API's
  if (!isLoopbackHost(metricsHost) && !allowRemote) throw new UsageError(`--metrics-host: ${metricsHost} is not a loopback address; pass --allow-remote to bind it`);
  if (metricsPort !== null && metricsPort !== 0 && metricsPort === port && metricsHost === host) throw new UsageError('--metrics-port: must differ from --port');
  const corsOrigins = (flags.get('cors-origin') as string[] | undefined) ?? [];
  for (const origin of corsOrigins) {
    if (!/^https?:\/\/[^/\s]+$/.test(origin)) throw new UsageError(`--cors-origin: "${origin}" is not an exact origin such as https://app.example.com`);
  }

  return Object.freeze({
    host,
    port,
    allowRemote,
    token,
    tokenFile,
    tenantRegistry,
    tenants,
    tenantStateRoot: effectiveTenantStateRoot,
    sandboxRunner,
    sandboxRuntime: sandboxRuntime as SandboxRuntimeName,
    sandboxQuota: sandboxQuota(flags),
    yolo: flags.get('yolo') === true,
    projectInstructions: flags.get('no-project-instructions') !== true,
    corsOrigins,
    workspaceRoots,
    limits: Object.freeze(limits),
    stateDir,
    databaseUrl,
    cluster,
    instanceId,
    turnLeaseSeconds: integerFlag(flags, 'turn-lease-seconds'),
    maxTurnTakeovers: integerFlag(flags, 'max-turn-takeovers'),
    modelsFile,
    modelsFileIsDefault: explicitModelsFile === null,
    logLevel,
    metricsPort,
    metricsHost,
    mcpConfig,
    mcpServers: mcpConfig ? loadMcpConfig(mcpConfig) : [],
    permissionsFile,
    permissionRules: Object.freeze(permissionsFile ? loadPermissionsFile(permissionsFile) : []),
    webhooks,
    webhookSecretFile,
  });
}


/** An integer flag, or its default, within the range its row of SERVE_FLAGS gives. */
function integerFlag(flags: RawFlags, name: string): number {
  const { default: fallback, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = flagDefinition(name);
  const raw = flags.get(name) as string | undefined;
  if (raw === undefined) {
    if (typeof fallback !== 'number') throw new Error(`--${name} has no default: read it only when given`);
    return fallback;
  }
  if (!/^-?\d+$/.test(raw)) throw new UsageError(`--${name}: expected an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) {
    throw new UsageError(max === Number.MAX_SAFE_INTEGER ? `--${name}: must be at least ${min}` : `--${name}: must be between ${min} and ${max}`);
  }
  return value;
}

/** A size flag (flags.ts parseSize); 0 is always accepted: it turns the feature off. */
function sizeFlag(flags: RawFlags, name: string): number {
  const { default: fallback, min = 0 } = flagDefinition(name);
  const raw = (flags.get(name) as string | undefined) ?? String(fallback);
  const bytes = parseSize(raw);
  if (bytes === null) throw new UsageError(`--${name}: expected a size such as 16M or 10G, got "${raw}"`);
  if (bytes !== 0 && bytes < min) throw new UsageError(`--${name}: must be 0 (off) or at least ${min} bytes`);
  return bytes;
}

function sandboxQuota(flags: RawFlags): SandboxQuota | null {
  const bytes = sizeFlag(flags, 'sandbox-disk-quota');
  const inodes = integerFlag(flags, 'sandbox-inode-quota');
  if (bytes === 0 && flags.has('sandbox-inode-quota')) throw new UsageError('--sandbox-inode-quota: needs a disk quota (--sandbox-disk-quota is 0)');
  return bytes === 0 ? null : { bytes, inodes };
}

/** A per-tenant flag may not exceed its global one; its default is capped by it. */
function perTenantFlag(flags: RawFlags, name: string, global: number, globalName: string): number {
  const value = integerFlag(flags, name);
  if (!flags.has(name)) return Math.min(value, global);
  if (value > global) throw new UsageError(`--${name}: ${value} exceeds --${globalName} (${global})`);
  return value;
}

function stringDefault(name: string): string {
  const fallback = flagDefinition(name).default;
  if (typeof fallback !== 'string') throw new Error(`--${name} has no text default`);
  return fallback;
}

function pathFlag(flags: RawFlags, name: string, cwd: string): string | null {
  const raw = flags.get(name) as string | undefined;
  if (raw === undefined) return null;
  if (raw.trim() === '') throw new UsageError(`--${name}: must not be empty`);
  return isAbsolute(raw) ? raw : resolve(cwd, raw);
}

function defaultStateDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state');
  return join(base, 'agentd');
}

export { UsageError };
