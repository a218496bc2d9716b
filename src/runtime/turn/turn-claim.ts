/**
 * A turn's claim: this process's ownership of one turn, the one object through which the runner
 * holds it (docs/ARCHITECTURE.md "The cluster"). Alone on its database a process owns its turns
 * outright: its claim confirms nothing, journals nothing and makes no round trip (soleClaims). An
 * instance of a cluster holds each turn under a lease and writes it under the fence
 * (cluster-claims.ts). Which of the two a boundary uses is chosen once, where it opens
 * (boundary-runtime.ts). However a turn stops being this instance's, the runner hears it one way:
 * TurnClaimLost (claim-lost.ts).
 */
import type { ProviderAdapter } from '../../agent/providers/types.ts';
import type { RecordedStep } from '../../agent/loop.ts';
import type { SessionRecord } from '../../domain/session.ts';
import type { TurnRecord, TurnText } from '../../domain/turn.ts';
import type { Db } from '../../store/database.ts';
import { insertTurn } from '../../store/turns.ts';
import { claimLostOf, type TurnClaimLost } from './claim-lost.ts';
import type { ActiveTurn } from './active-turns.ts';
import type { TurnTools } from './tool-port.ts';

/** Who holds a claim: told when the turn stops being this instance's, or a cancel comes through another instance. */
export interface ClaimHolder {
  lost(lost: TurnClaimLost): void;
  cancelRequested(): void;
}

/** One-step journal of a turn's agent loop (runAgentLoop's `persist`). */
export type StepJournal = (step: RecordedStep) => Promise<void>;

export interface TurnClaim {
  /** the turn's attempt while this claim holds it: what the fence checks */
  readonly attempt: number;
  /** From now on `holder` hears of the claim's loss; a loss heard before is passed on at once. */
  heldBy(holder: ClaimHolder): void;
  /**
   * Before the turn asks the model or runs a tool: resolves while the turn is still this
   * instance's, else throws TurnClaimLost.
   */
  confirm(): Promise<void>;
  /** The turn's adapter and tools, each model request and tool call starting only once confirmed (as given when nothing needs confirming). */
  confirming(adapter: ProviderAdapter): ProviderAdapter;
  confirmingTools(tools: TurnTools): TurnTools;
  /**
   * Where each step of the agent loop is stored as it is made, after the `recorded` ones, for
   * another instance to resume the turn from; undefined when nobody can resume it.
   */
  journal(recorded: number): StepJournal | undefined;
  /** A state of the turn short of its end: stored, in order, where other instances read it (or nowhere). */
  show(record: TurnRecord): void;
  /** The states shown are stored (or failed): the terminal write may follow, a tool approved may start. */
  shown(): Promise<void>;
  /** A write on behalf of the turn: the fence's refusal (StaleTurnWrite) comes out as TurnClaimLost. */
  write<T>(write: () => Promise<T>): Promise<T>;
  /**
   * Work of the running turn on the database (its journal, its human requests): where others
   * resume the turn, the database not answering lets the turn go for them to (TurnClaimLost).
   */
  whileRunning<T>(work: () => Promise<T>): Promise<T>;
  /** The turn ended, or was let go: the claim holds it no more. */
  release(): void;
}

/** A new turn stored and claimed: whether its boundary's queue was full, and its session as read at admission. */
export interface ClaimedAdmission {
  claim: TurnClaim;
  queueFull: boolean;
  session: SessionRecord;
}

/** --cluster: an older turn queued on another instance than `turn`, taken and ready to run here, or null. */
export type OlderQueuedTurn = (turn: ActiveTurn) => Promise<ResumedTurn | null>;

/**
 * How a turn taken over from another instance goes on (turn-resume.ts): after the steps its former
 * owners recorded, with the calls whose result was not recorded given to the model as interrupted.
 */
export interface ResumePlan {
  steps: RecordedStep[];
  /** calls of the newest recorded response that may have run: not run again */
  interrupted: ReadonlySet<string>;
}

/** A turn taken over, reserved here under its claim, with where it goes on from. */
export interface ResumedTurn {
  turn: ActiveTurn;
  claim: TurnClaim;
  plan: ResumePlan;
}

/** How a boundary claims its turns: chosen once, when it opens. */
export interface TurnClaims {
  /** Stores a new turn (its `queued` row) and claims it; 409 session_busy when a cluster finds its session busy. */
  admit(turn: ActiveTurn, text: TurnText): Promise<ClaimedAdmission>;
  /** --cluster: first come first served across instances (TurnRunner's queue); null alone. */
  readonly olderQueued: OlderQueuedTurn | null;
}

/** A write whose refusal by the fence comes out as TurnClaimLost. */
async function underClaim<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw claimLostOf(error);
  }
}

/** Alone on its database, a process owns its turns outright: nothing to renew, confirm or journal. */
class SoleClaim implements TurnClaim {
  constructor(readonly attempt: number) {}
  heldBy(): void {}
  confirm(): Promise<void> {
    return Promise.resolve();
  }
  confirming(adapter: ProviderAdapter): ProviderAdapter {
    return adapter;
  }
  confirmingTools(tools: TurnTools): TurnTools {
    return tools;
  }
  journal(): undefined {
    return undefined;
  }
  // Nothing else reads an active turn's row here: it keeps `queued` until the terminal write (TurnRunner.advance).
  show(): void {}
  shown(): Promise<void> {
    return Promise.resolve();
  }
  write<T>(write: () => Promise<T>): Promise<T> {
    return underClaim(write);
  }
  whileRunning<T>(work: () => Promise<T>): Promise<T> {
    return work();
  }
  release(): void {}
}

/** The claims of a boundary whose process is its database's only writer of turns. */
export function soleClaims(db: Db): TurnClaims {
  return {
    async admit(turn, text) {
      await insertTurn(db, turn.record, text);
      return { claim: new SoleClaim(turn.record.attempt), queueFull: false, session: turn.session };
    },
    olderQueued: null,
  };
}
