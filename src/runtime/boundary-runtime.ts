import type { Logger } from 'pino';
import type { Boundary } from './boundary.ts';
import { SessionService } from './session/sessions.ts';
import { EventHub } from './event-hub.ts';
import { RequestBroker } from './turn/requests.ts';
import { ActiveTurns } from './turn/active-turns.ts';
import { shareAgentsView } from './turn/shared-agents-view.ts';
import { TurnService } from './turn/turns.ts';
import { TurnRunner } from './turn/turn-runner.ts';
import { TurnLeases } from './turn/turn-leases.ts';
import { ClusterSteers } from './turn/cluster-steers.ts';
import { TurnResumption } from './turn/turn-resume.ts';
import { ClusterClaims } from './turn/cluster-claims.ts';
import { soleClaims } from './turn/turn-claim.ts';
import { TurnReverts } from './turn/turn-reverts.ts';
import type { TurnToolsFactory } from './turn/tool-port.ts';
import { MODEL_CONTEXT_CACHE_LIMITS, ModelContextCache, NO_MODEL_CONTEXT_CACHE } from './context/model-context-cache.ts';
import { sessionRowCache } from '../store/session-row-cache.ts';
import type { Scheduler } from './turn/scheduler.ts';
import { RepositorySetups } from './session/setup.ts';
import { workspaceCommands } from './workspace-commands.ts';
import { failInterruptedTurns, type OwnerlessEnd } from '../store/ownerless-ends.ts';
import { nowIso } from '../domain/ids.ts';
import type { CatalogModel } from '../config/models-file.ts';
import type { ProviderAdapter } from '../agent/providers/types.ts';
import type { RuntimeTelemetry } from '../telemetry/runtime-telemetry.ts';
import { NO_METRICS } from '../telemetry/recorder.ts';
import { DEFAULT_BOUNDARY_ID, metricsTenantOf } from './boundary.ts';
import type { WebhookConfig } from '../config/webhooks.ts';
import type { WebhookSender } from './webhooks/webhook-sender.ts';
import type { BoundaryWebhooks } from './webhooks/webhook-outbox.ts';
import type { ClusterDuties } from './cluster-supervisor.ts';

export interface BoundaryRuntimeDeps {
  /** the process's scheduler: every boundary takes its share of the global limits from it */
  scheduler: Scheduler;
  logger: Logger;
  adapterFor(model: CatalogModel): Promise<ProviderAdapter>;
  /** builds the tools of one agent of a turn (policy, approvals, execution) */
  toolsFor: TurnToolsFactory;
  /** the server's metrics and tracing; nothing is recorded without it */
  telemetry?: RuntimeTelemetry;
  /** --webhook-url: the configuration and the process's sender; none without */
  webhooks?: BoundaryWebhookDeps | null;
}

export interface BoundaryWebhookDeps {
  config: WebhookConfig;
  sender: WebhookSender;
  /** true the first time this process opens the boundary's outbox: claims a dead process left are voided then */
  firstLook(boundaryId: string): boolean;
}

/** The services of one boundary, each built complete, once, when the boundary opens. */
export class BoundaryRuntime {
  readonly sessions: SessionService;
  readonly turns: TurnService;
  readonly activeTurns: ActiveTurns;
  readonly requests: RequestBroker;
  readonly setups: RepositorySetups;
  /** --cluster: the leases on this instance's turns */
  private readonly leases: TurnLeases | null;
  /** --cluster: steers taken on any instance reach the turns held here */
  private readonly steers: ClusterSteers | null;
  private readonly logger: Logger;
  private readonly runner: TurnRunner;

  private constructor(
    readonly boundary: Boundary,
    readonly hub: EventHub,
    deps: BoundaryRuntimeDeps,
    /** --webhook-url: this boundary's outbox and its worker */
    private readonly webhooks: BoundaryWebhooks | null,
  ) {
    const { scheduler, logger, adapterFor, toolsFor, telemetry } = deps;
    this.logger = logger;
    const activeTurns = new ActiveTurns(boundary.cluster ? (turn) => shareAgentsView(boundary.db, turn, logger) : undefined);
    this.activeTurns = activeTurns;
    hub.fenceWith((turnId) => activeTurns.get(turnId)?.record.attempt);
    // Repository work and attachment clean-up run where the boundary's tools run (CONTRACT.md §17).
    const commands = workspaceCommands(boundary.tools, boundary.workspaceRoots);
    this.setups = new RepositorySetups(hub, logger, commands);
    const duties = boundary.cluster ? clusterDutiesOf(boundary) : null;
    const sharedRequests = duties ? { db: boundary.db, boundaryId: boundary.id, attemptOf: (turnId: string) => activeTurns.get(turnId)?.record.attempt, logger, duties } : null;
    this.requests = new RequestBroker(hub, telemetry?.metrics, sharedRequests, webhooks, logger);
    // Instances of a cluster write the same sessions and histories: neither is kept in memory.
    if (boundary.cluster) sessionRowCache(boundary.db).shareWithOtherWriters();
    const contexts = new ModelContextCache(boundary.db, boundary.cluster ? NO_MODEL_CONTEXT_CACHE : MODEL_CONTEXT_CACHE_LIMITS);
    this.sessions = new SessionService(boundary, hub, (sessionId) => activeTurns.isBusy(sessionId), this.setups, (sessionId) => contexts.forget(sessionId));
    // How this boundary holds its turns, chosen once: alone, or under a cluster's leases and fence.
    const leases = (this.leases = boundary.cluster && duties ? new TurnLeases(boundary.db, boundary.cluster, logger, hub, webhooks, duties, ownerlessEndCounter(boundary, telemetry)) : null);
    const resumption = new TurnResumption({ boundary, active: activeTurns, requests: this.requests, logger });
    const clusterClaims = leases ? new ClusterClaims({ boundary, leases, logger, prepare: (taken, hold) => resumption.prepare(taken, hold) }) : null;
    const claims = clusterClaims ?? soleClaims(boundary.db);
    const runner = (this.runner = new TurnRunner({ boundary, hub, active: activeTurns, contexts, scheduler, requests: this.requests, setups: this.setups, commands, adapterFor, toolsFor, logger, telemetry, claims, webhooks }));
    const reverts = new TurnReverts({ boundary, hub, sessionBusy: (sessionId) => activeTurns.isBusy(sessionId) });
    this.steers = duties ? new ClusterSteers(boundary.db, boundary.id, activeTurns, hub, logger, duties) : null;
    this.turns = new TurnService(boundary, this.sessions, activeTurns, runner, hub, claims, leases, reverts, this.steers);
    if (leases && clusterClaims) {
      leases.resumeWith(async (taken) => {
        const resumed = await clusterClaims.resumed(taken);
        if (resumed) runner.resume(resumed);
      });
      leases.pullQueuedWhen(boundary.id, () => scheduler.hasIdleSlot(boundary.id));
    }
  }

  /**
   * Opens the boundary: without --cluster, turns a dead process left active become failed
   * `interrupted` (SPEC.md §6). An instance of a cluster leaves them to the leases: they may be
   * running on another instance, and once their leases run out they are taken over and resumed,
   * here or elsewhere, a lone restarted instance's included (CONTRACT.md §18).
   */
  static async open(boundary: Boundary, deps: BoundaryRuntimeDeps): Promise<BoundaryRuntime> {
    const webhooks = deps.webhooks ? await boundaryWebhooks(boundary, deps) : null;
    let interrupted: OwnerlessEnd[] = [];
    if (boundary.aloneOnDatabase && !boundary.cluster) {
      const at = nowIso();
      // their webhooks say so too: a receiver waiting for the turn's end hears of it
      const announce = webhooks ? (turns: OwnerlessEnd[]) => webhooks.writeAll(turns.map((turn) => ({ type: 'turn.failed' as const, at, sessionId: turn.sessionId, turnId: turn.id, data: { error: 'interrupted' } }))) : undefined;
      interrupted = await failInterruptedTurns(boundary.db, at, announce);
      if (interrupted.length > 0) deps.logger.warn({ boundary: boundary.id, interrupted: interrupted.length }, 'turns interrupted by a restart were marked failed');
    }
    await webhooks?.start({ alone: boundary.aloneOnDatabase, releaseClaims: boundary.aloneOnDatabase && deps.webhooks!.firstLook(boundary.id) });
    const hub = await EventHub.open(boundary.db, boundary.id, boundary.limits.eventReplayLimit, deps.logger, deps.telemetry?.metrics, boundary.cluster ? clusterDutiesOf(boundary) : null);
    // their ends are announced and counted as an owner's are (replayed to a client resuming its stream)
    const countEnd = ownerlessEndCounter(boundary, deps.telemetry);
    for (const turn of interrupted) {
      hub.emit('turn.failed', turn.sessionId, turn.id, { error: turn.error });
      countEnd(turn.status);
    }
    return new BoundaryRuntime(boundary, hub, deps, webhooks);
  }

  /**
   * Nothing would be lost by closing it: no turn queued, running or waiting, no checkout, no
   * subscriber. Webhooks still owed do not count: they wait in the outbox (a receiver down for a day
   * must not pin a tenant's runtime), and close() abandons an attempt in flight as owed.
   */
  isIdle(): boolean {
    return this.activeTurns.ids().length === 0 && !this.setups.anyRunning() && this.hub.log.subscriberCount === 0;
  }

  /**
   * Cancels every active turn and waits for them to be stored, then stops the boundary's sandbox
   * runner. `handOver` (SIGTERM on an instance of a live cluster, CONTRACT.md §18): the turns stop
   * here without an end instead, and their leases are given up at once, so that another instance
   * takes them over at its next sweep and resumes them.
   */
  async close(options: { handOver?: boolean } = {}): Promise<void> {
    if (options.handOver && this.leases) {
      const held = this.leases.leave();
      await this.turns.handOverAll();
      await this.leases.releaseHeld(held).catch((error: unknown) => this.logger.warn({ err: error }, 'could not release the leases handed over; they run out instead'));
    } else await this.turns.cancelAll();
    this.leases?.stop();
    this.steers?.stop();
    this.requests.stop();
    await this.setups.stopAll();
    this.runner.close();
    await this.boundary.tools.close();
    await this.hub.flush();
    await this.boundary.duties?.close();
    // what is still owed stays in the outbox, for the next start
    await this.webhooks?.stop();
  }
}

function clusterDutiesOf(boundary: Boundary): ClusterDuties {
  if (!boundary.duties) throw new Error('a boundary of a cluster opens with its instance\'s supervisor (Boundary.duties)');
  return boundary.duties;
}

/** The boundary's outbox and worker; the module loads only when webhooks are configured. */
async function boundaryWebhooks(boundary: Boundary, deps: BoundaryRuntimeDeps): Promise<BoundaryWebhooks> {
  const { BoundaryWebhooks } = await import('./webhooks/webhook-outbox.ts');
  const { config, sender } = deps.webhooks!;
  return new BoundaryWebhooks({
    db: boundary.db, config, sender, tenantId: boundary.id === DEFAULT_BOUNDARY_ID ? null : boundary.id, metrics: deps.telemetry?.metrics ?? NO_METRICS, logger: deps.logger,
  });
}

/** Counts a turn of the boundary that no owner ended (a restart's recovery, a cluster's sweep) in agentd_turns_total. */
function ownerlessEndCounter(boundary: Boundary, telemetry: RuntimeTelemetry | undefined): (status: string) => void {
  const tenant = metricsTenantOf(boundary.id);
  return (status) => telemetry?.metrics.turnEndedWithoutOwner(status, tenant);
}
