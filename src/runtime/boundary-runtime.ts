import type { Logger } from 'pino';
import type { Boundary } from './boundary.ts';
import { SessionService } from './sessions.ts';
import { EventHub } from './event-hub.ts';
import { RequestBroker } from './requests.ts';
import { TurnService, type ActiveTurn } from './turns.ts';
import { runTurn, type TurnTools } from './turn-runner.ts';
import type { Scheduler } from './scheduler.ts';
import { RepositorySetups } from './setup.ts';
import { failInterruptedTurns } from '../store/turns.ts';
import { nowIso } from '../domain/ids.ts';
import type { CatalogModel } from '../config/models-file.ts';
import type { ProviderAdapter } from '../agent/providers/types.ts';

export interface BoundaryRuntimeDeps {
  scheduler: Scheduler<ActiveTurn>;
  logger: Logger;
  adapterFor(model: CatalogModel): Promise<ProviderAdapter>;
  /** builds the tools of one turn (policy, approvals, execution) */
  toolsFor(runtime: BoundaryRuntime, turn: ActiveTurn): TurnTools;
}

/** The services of one boundary, created once when the boundary becomes active. */
export class BoundaryRuntime {
  readonly sessions: SessionService;
  readonly turns: TurnService;
  readonly requests: RequestBroker;
  readonly setups: RepositorySetups;

  private constructor(
    readonly boundary: Boundary,
    readonly hub: EventHub,
    deps: BoundaryRuntimeDeps,
  ) {
    this.setups = new RepositorySetups(hub, deps.logger);
    this.sessions = new SessionService(boundary, (sessionId) => this.turns.isBusy(sessionId), this.setups);
    this.turns = new TurnService(boundary, this.sessions, hub, deps.scheduler, deps.logger);
    this.requests = new RequestBroker(hub);
    this.turns.executor = (turn) =>
      runTurn(
        {
          boundary,
          hub,
          turns: this.turns,
          adapterFor: deps.adapterFor,
          toolsFor: (active) => deps.toolsFor(this, active),
          setups: this.setups,
          logger: deps.logger,
        },
        turn,
      );
  }

  /** Opens the boundary: turns a dead process left active become failed `interrupted`. */
  static async open(boundary: Boundary, deps: BoundaryRuntimeDeps): Promise<BoundaryRuntime> {
    const interrupted = await failInterruptedTurns(boundary.db, nowIso());
    if (interrupted > 0) deps.logger.warn({ boundary: boundary.id, interrupted }, 'turns interrupted by a restart were marked failed');
    const hub = await EventHub.open(boundary.db, boundary.id, boundary.limits.eventReplayLimit, deps.logger);
    return new BoundaryRuntime(boundary, hub, deps);
  }

  /** Cancels every active turn and waits for them to be stored. */
  async close(): Promise<void> {
    await this.turns.cancelAll();
    await this.setups.stopAll();
    await this.hub.flush();
  }
}
