import type { TurnReceipt } from './turn-receipt.ts';
import type { TurnRecord } from '../../domain/turn.ts';
import type { SessionRecord } from '../../domain/session.ts';
import type { DecodedAttachments } from '../../workspace/attachments.ts';
import { TerminalTurnCache } from './terminal-cache.ts';
import { TurnAgents } from './turn-agents.ts';
import type { AgentRecord } from '../../domain/projection.ts';
import { TurnSteering } from './steering.ts';
import { isContextCommand } from '../context/context-command.ts';
import type { OutputSchema } from '../../agent/structured-output.ts';

/** A turn between its reservation and its terminal state, as this process holds it. */
export interface ActiveTurn {
  /** the newest truth about the turn; only the turn runner replaces it, one transition at a time */
  record: TurnRecord;
  /** as read at admission (--cluster: under the session's lock, store/turn-leases.ts insertLeasedTurn) */
  session: SessionRecord;
  readonly attachments: DecodedAttachments;
  /** the turn's outputSchema, compiled (CONTRACT.md §22); null without one */
  readonly outputSchema: OutputSchema | null;
  readonly abort: AbortController;
  /** the turn's child agents (spawn_agent) */
  readonly agents: TurnAgents;
  /** input steered into the turn, waiting for its next model request */
  readonly steering: TurnSteering;
  /** what the turn's tools changed in the workspace, once the turn has started running */
  receipt?: TurnReceipt;
  /** settles when the turn is terminal and durable */
  readonly finished: Promise<void>;
}

/**
 * The turns of one boundary that are active in this process (at most one per session), and the
 * newest terminal ones (SPEC.md §8: the latest 1,000).
 */
export class ActiveTurns {
  private readonly bySession = new Map<string, ActiveTurn>();
  private readonly byId = new Map<string, ActiveTurn>();
  private readonly finishers = new WeakMap<ActiveTurn, () => void>();
  private readonly terminal = new TerminalTurnCache(1000);
  /** the child agents of the terminal turns above, forgotten with them (same insertions, same capacity) */
  private readonly terminalAgents = new Map<string, TurnAgents>();

  /** `reserved`: told of each turn as it is reserved (--cluster: its agents view is shared) */
  constructor(private readonly reserved: (turn: ActiveTurn) => void = () => {}) {}

  /** Holds a new turn; the caller has checked that its session is idle. */
  reserve(record: TurnRecord, session: SessionRecord, attachments: DecodedAttachments, outputSchema: OutputSchema | null = null): ActiveTurn {
    let markFinished!: () => void;
    const finished = new Promise<void>((resolve) => (markFinished = resolve));
    const steering = new TurnSteering(!isContextCommand(record.input, attachments));
    const turn: ActiveTurn = { record, session, attachments, outputSchema, abort: new AbortController(), agents: new TurnAgents(), steering, finished };
    this.finishers.set(turn, markFinished);
    this.bySession.set(session.id, turn);
    this.byId.set(record.id, turn);
    this.reserved(turn);
    return turn;
  }

  /** Forgets a turn whose reservation never became durable. */
  drop(turn: ActiveTurn): void {
    if (this.bySession.get(turn.session.id) === turn) this.bySession.delete(turn.session.id);
    this.byId.delete(turn.record.id);
  }

  /** The turn is terminal and durable: it leaves the active set for the terminal cache. */
  release(turn: ActiveTurn): void {
    this.drop(turn);
    this.terminal.add({ ...turn.record });
    this.terminalAgents.delete(turn.record.id);
    this.terminalAgents.set(turn.record.id, turn.agents);
    if (this.terminalAgents.size > this.terminal.capacity) this.terminalAgents.delete(this.terminalAgents.keys().next().value!);
    this.finishers.get(turn)?.();
  }

  /** Another instance took the turn over: this process forgets it, keeping no record of it. */
  letGo(turn: ActiveTurn): void {
    this.drop(turn);
    this.finishers.get(turn)?.();
  }

  get(id: string): ActiveTurn | undefined {
    return this.byId.get(id);
  }

  ofSession(sessionId: string): ActiveTurn | undefined {
    return this.bySession.get(sessionId);
  }

  isBusy(sessionId: string): boolean {
    return this.bySession.has(sessionId);
  }

  /** A copy of the turn's record: active, or among the newest terminal ones. */
  recordOf(id: string): TurnRecord | undefined {
    const active = this.byId.get(id);
    return active ? { ...active.record } : this.terminal.get(id);
  }

  /** The child agents of a turn this process holds (active or among the newest terminal ones). */
  agentsOf(id: string): AgentRecord[] | undefined {
    return (this.byId.get(id)?.agents ?? this.terminalAgents.get(id))?.view();
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }
}
