import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config/config.ts';
import { serverSecrets } from './config/server-secrets.ts';
import { emptyCatalogAdvice, loadCatalog } from './config/catalog.ts';
import { openStore, type Store } from './store/database.ts';
import { canonicalizeRoot } from './workspace/paths.ts';
import { buildOpenApiDocument } from './api/openapi.ts';
import { loadContract } from './api/contract.ts';
import { buildApp } from './http/app.ts';
import { createHandlers, type HandlerContext } from './http/handlers.ts';
import type { BoundaryRuntime } from './runtime/boundary-runtime.ts';
import { clusterMembership } from './runtime/turn/turn-leases.ts';
import { openBoundaryRuntime, turnToolsFactory } from './runtime/open-boundary.ts';
import { Scheduler } from './runtime/turn/scheduler.ts';
import { AdapterCache } from './runtime/adapters.ts';
import { SubscriberLimits } from './http/events-route.ts';
import { TurnWaits } from './http/turn-waits.ts';
import type { Dialect } from './agent/providers/types.ts';
import { DEFAULT_BOUNDARY_ID } from './runtime/boundary.ts';
import { endOrphanedSandboxes } from './sandbox/orphan-sweep.ts';
import { registerProtocolRoutes, withProtocolPaths } from './protocols/routes.ts';
import { detectHostConfinement, type ConfinementMode } from './exec/host-confinement.ts';
import { createProcessGroupRunner } from './exec/process-group.ts';
import type { CatalogModel } from './config/models-file.ts';
import { startTelemetry } from './telemetry/telemetry.ts';
import { lazyToolRegistries } from './runtime/tool-registries.ts';
import type { McpManager } from './mcp/mcp-manager.ts';
import type { ServerActivity } from './cli/idle-collection.ts';
import { VERSION } from './version.ts';
import { ClusterSupervisor } from './runtime/cluster-supervisor.ts';

export interface RunningServer {
  app: FastifyInstance;
  store: Store;
  /** the address actually bound, e.g. http://127.0.0.1:4096 */
  url: string;
  port: number;
  /** the Prometheus scrape URL with --metrics-port, else null */
  metricsUrl: string | null;
  /** what the server has been doing, for work that should wait until it is idle */
  activity(): ServerActivity;
  /** --cluster: the instance's one loop for background work; null without */
  supervisor: ClusterSupervisor | null;
  close(): Promise<void>;
}


/** Opens the store, builds the application and listens. Throws before binding on bad configuration. */
/** Knobs for embedding and tests; the CLI uses the defaults. */
export interface ServerTuning {
  /** SSE keep-alive interval (CONTRACT.md: 15 s) */
  keepAliveMs?: number;
  /** 'auto' (default): confine commands with bubblewrap when a probe at start-up works; 'off': never */
  confinement?: ConfinementMode;
  /**
   * The database claim was lost to another agentd (docs/CLUSTER.md): the server is closing, closed
   * when `closed` settles. The CLI then exits 1.
   */
  onStandDown?: (error: Error, closed: Promise<void>) => void;
  /** --cluster: how often duties woken by the doorbell look without a ring (cluster-supervisor.ts; a test makes it long) */
  clusterPollMs?: number;
}

export async function startServer(config: Config, env: NodeJS.ProcessEnv, logger?: Logger, tuning: ServerTuning = {}): Promise<RunningServer> {
  // Lines go out asynchronously: a line written while the previous write is in flight joins the
  // next write instead of blocking the event loop on its own system call; pino writes what is left
  // synchronously when the process exits (docs/BENCHMARKS.md, request path).
  const log = logger ?? pino({ level: config.logLevel, redact: { paths: ['req.headers.authorization', 'headers.authorization'], remove: true } }, pino.destination({ dest: 1, sync: false }));
  const catalog = loadCatalog(config, env);
  if (catalog.models.length === 0) log.warn(emptyCatalogAdvice());
  const workspaceRoots = config.workspaceRoots.map(canonicalizeRoot);
  const serverFiles = serverSecrets(config).map((secret) => secret.path);
  // The bubblewrap probe (a confined `true`) runs while the store opens; it never rejects.
  const probingConfinement = detectHostConfinement({
    mode: tuning.confinement ?? 'auto',
    secretPaths: serverFiles,
    logger: log,
  });
  // The database is claimed first: a second agentd on it is refused before it touches anything
  // (the state dir's sandboxes included). In multi-tenant mode --database-url is the administrative
  // connection: provisioning, then /readyz; each tenant's database is claimed as its runtime opens.
  let started = false;
  let lostClaim: Error | null = null;
  const claim = {
    mode: config.cluster ? ('cluster' as const) : ('sole' as const),
    onLost: (error: Error) => {
      log.fatal({ instance: config.instanceId, reason: error.message }, 'the database claim was lost to another agentd: standing down');
      // during start-up, start-up fails once it is done
      if (!started) lostClaim = error;
      else tuning.onStandDown?.(error, close());
    },
  };
  // --cluster: a partition ends within a lease (store/session-deadlines.ts)
  const leaseMs = config.cluster ? { leaseMs: config.turnLeaseSeconds * 1000 } : {};
  const store = await openStore({ databaseUrl: config.databaseUrl, stateDir: config.stateDir, claim, ...leaseMs, ...(config.tenants ? { maxConnections: 1, migrate: false } : {}) });
  // The registry's database holds no turns for a lone instance to end first: the cluster's other
  // instances may join at once (provisioning serialises itself; a tenant's database is claimed apart).
  if (config.tenants) await store.claim?.admitOthers();
  let telemetry: Awaited<ReturnType<typeof startTelemetry>>;
  try {
    telemetry = await startTelemetry({ metricsPort: config.metricsPort, metricsHost: config.metricsHost, perTenant: config.tenants !== null }, env, log, VERSION);
  } catch (error) {
    await store.close();
    throw error;
  }
  endOrphanedSandboxes(config.stateDir, log);

  const schedulerLimits = {
    maxRunning: config.limits.maxConcurrentTurns,
    maxQueued: config.limits.maxQueuedTurns,
    maxRunningPerTenant: config.tenants ? config.limits.maxConcurrentTurnsPerTenant : null,
    maxQueuedPerTenant: config.tenants ? config.limits.maxQueuedTurnsPerTenant : null,
  };
  // a multi-tenant cluster counts the server-wide queue across its instances (tenancy/cluster-queue.ts)
  const scheduler =
    config.tenants && config.cluster
      ? new (await import('./tenancy/cluster-queue.ts')).ClusterScheduler(config.limits.maxQueuedTurns, schedulerLimits)
      : new Scheduler(schedulerLimits);
  telemetry.metrics.observeTurnQueue(() => scheduler.counts);
  const mcp = await startMcpServers(config, log);
  const confinement = await probingConfinement;
  const shell = { confined: confinement.confined };
  const adapters = new AdapterCache(catalog);
  // The tools, with TypeBox that declares their arguments, load with the first turn, not at start-up.
  const builtInRegistryFor = lazyToolRegistries({ shell });
  const registryFor = async (dialect: Dialect) => {
    const registry = await builtInRegistryFor(dialect);
    return mcp ? (await import('./mcp/mcp-tools.ts')).withMcpTools(registry, mcp) : registry;
  };
  const adapterFor = (model: CatalogModel) => adapters.adapterFor(model);
  // the sender (node:https with it) loads only when webhooks are configured
  const webhooks = config.webhooks
    ? {
        config: config.webhooks,
        sender: new (await import('./runtime/webhooks/webhook-sender.ts')).WebhookSender({ secret: config.webhooks.secret, allowLoopback: config.webhooks.allowLoopback }),
        // the one boundary opens once; tenant hosting answers per tenant
        firstLook: () => true,
      }
    : null;
  // --cluster: one loop runs the background work of every boundary this instance opens
  const supervisor = config.cluster ? new ClusterSupervisor({ instanceId: config.instanceId, logger: log, pollMs: tuning.clusterPollMs }) : null;
  let runtimeFor: HandlerContext['runtimeFor'];
  let closeRuntimes: () => Promise<void>;
  if (config.tenants) {
    try {
      // Loaded only in multi-tenant mode: the registry's schema would cost every other start-up.
      const { startTenantHosting } = await import('./tenancy/tenant-hosting.ts');
      const hosting = await startTenantHosting({ config, catalog, scheduler, logger: log, adapterFor, telemetry, claim, webhooks, adminDb: store.db, supervisor, aloneOnRegistry: store.claim?.alone ?? true, othersPresent: async () => (await store.claim?.othersPresent()) ?? false });
      runtimeFor = hosting.runtimeFor;
      closeRuntimes = hosting.close;
    } catch (error) {
      await mcp?.close();
      await store.close();
      throw error;
    }
  } else {
    let runtime: BoundaryRuntime;
    try {
      const hostRunner = confinement.confined ? confinement.runner : createProcessGroupRunner();
      runtime = await openBoundaryRuntime(
        {
          id: DEFAULT_BOUNDARY_ID, db: store.db, aloneOnDatabase: store.claim?.alone ?? true, cluster: clusterMembership(config), duties: supervisor?.boundary(store.doorbell) ?? null, workspaceRoots, catalog, limits: config.limits, yolo: config.yolo, projectInstructions: config.projectInstructions, stateDir: config.stateDir,
          tools: { sandboxRunner: config.sandboxRunner, workspaceRoots, hostRunner, serverFiles },
        },
        { scheduler, logger: log, adapterFor, toolsFor: turnToolsFactory(registryFor, { confinedExecution: confinement.confined, telemetry, permissionRules: config.permissionRules }), telemetry, webhooks },
      );
      await store.claim?.admitOthers();
    } catch (error) {
      await mcp?.close();
      await store.close();
      throw error;
    }
    runtimeFor = () => runtime;
    // SIGTERM on an instance of a live cluster hands its turns over; the last one ends them (§18)
    closeRuntimes = async () => runtime.close({ handOver: config.cluster && ((await store.claim?.othersPresent()) ?? false) });
  }
  const closeBoundaries = closeRuntimes;
  closeRuntimes = async () => {
    await closeBoundaries();
    supervisor?.close();
    webhooks?.sender.close();
  };

  let boundPort = config.port;
  const models = catalog.models.map(toModelDto);
  const subscribers = new SubscriberLimits(config.limits.maxEventSubscribers, config.tenants ? config.limits.maxEventSubscribersPerTenant : null);
  telemetry.metrics.observeEventSubscribers(() => subscribers.count);
  // ?wait= requests of GET /v1/turns/:id/result, capped per boundary like the event streams
  const turnWaits = new TurnWaits(config.tenants ? config.limits.maxEventSubscribersPerTenant : config.limits.maxEventSubscribers);
  const contract = await loadContract();
  let stopping = false;
  const app = buildApp({
    isStopping: () => stopping,
    operations: contract.operations,
    logger: log,
    logEveryRequest: config.tenants !== null,
    metrics: telemetry.metrics,
    tracing: telemetry.tracing,
    maximumRequestBytes: config.limits.maximumRequestBytes,
    access: { corsOrigins: new Set(config.corsOrigins), token: config.token ? Buffer.from(config.token) : null, tenants: config.tenants, port: () => boundPort },
    handlers: createHandlers({
      runtimeFor,
      ping: () => store.ping(),
      pending: () => (mcp ? { mcp: mcp.pending() } : {}),
      instanceId: config.instanceId,
      openApiDocument: withProtocolPaths(buildOpenApiDocument(VERSION, contract)),
      models: () => models,
      subscriberLimits: subscribers,
      turnWaits,
      keepAliveMs: tuning.keepAliveMs,
    }),
  });

  const hostForUrl = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  const protocols = registerProtocolRoutes(app, { selfUrl: () => `http://${hostForUrl}:${boundPort}`, version: VERSION });

  try {
    await app.listen({ host: config.host, port: config.port });
    await telemetry.listen();
  } catch (error) {
    await app.close();
    await closeRuntimes();
    await mcp?.close();
    await store.close();
    await telemetry.close();
    throw error;
  }
  let requests = 0;
  app.server.on('request', () => requests++);
  const address = app.server.address();
  boundPort = typeof address === 'object' && address ? address.port : config.port;
  log.info({ host: config.host, port: boundPort, backend: store.backend, models: models.length, instance: config.instanceId, cluster: config.cluster }, 'agentd listening');

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      // Stop accepting (new requests on open connections get 503 server_stopping), let in-flight
      // requests finish, end live turns durably, then close.
      stopping = true;
      // ACP connections and MCP sessions hold streams open; they end before the app waits on them
      await protocols.close();
      const closingApp = app.close();
      await closeRuntimes();
      // Live SSE streams never end on their own; the final turn events went out above.
      subscribers.endAll();
      turnWaits.endAll();
      // A request still in flight now (a client that never finishes its body) gets a short grace.
      const grace = setTimeout(() => app.server.closeAllConnections(), IN_FLIGHT_GRACE_MS);
      await closingApp;
      clearTimeout(grace);
      await mcp?.close();
      await store.close();
      await telemetry.close();
    })();
    return closing;
  };
  started = true;
  if (lostClaim) {
    await close();
    throw lostClaim;
  }
  return {
    app,
    store,
    port: boundPort,
    url: `http://${hostForUrl}:${boundPort}`,
    metricsUrl: telemetry.metricsUrl,
    activity: () => ({ requests, activeTurns: scheduler.counts.running + scheduler.counts.queued }),
    supervisor,
    close,
  };
}

/**
 * The MCP tool servers of --mcp-config, connecting in the background while the API starts (their
 * tools join sessions as each server is ready; /readyz names those still pending); null without
 * any. Not in multi-tenant mode: one server process would be shared by every tenant, its state and
 * credentials with it.
 */
async function startMcpServers(config: Config, log: Logger): Promise<McpManager | null> {
  if (config.mcpServers.length === 0) return null;
  if (config.tenants) {
    log.warn({ mcpServers: config.mcpServers.length }, '--mcp-config is ignored in multi-tenant mode: an MCP server would be shared by every tenant');
    return null;
  }
  const { McpManager } = await import('./mcp/mcp-manager.ts');
  const manager = new McpManager(config.mcpServers, { logger: log, clientVersion: VERSION });
  // never rejects: a failed attempt schedules its own restart
  void manager.start();
  return manager;
}

/** How long requests still in flight after the live turns were recorded may take to finish. */
const IN_FLIGHT_GRACE_MS = 5_000;

function toModelDto(model: CatalogModel) {
  return {
    id: model.id,
    provider: model.provider,
    connection: model.connection,
    transportModel: model.transportModel,
    dialect: model.dialect,
    label: model.label,
    contextWindow: model.contextWindow,
    efforts: model.efforts,
    defaultEffort: model.defaultEffort,
  };
}
