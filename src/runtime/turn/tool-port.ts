import type { TurnReceipt } from './turn-receipt.ts';
import type { HumanDecision, HumanRequestKind } from '../../agent/tools/types.ts';
import type { DecisionCheck, RequestBroker } from './requests.ts';
import { TurnClaimLost } from './claim-lost.ts';
import type { ToolCall, ToolCallResult } from '../../agent/loop.ts';
import type { ToolSpec } from '../../agent/providers/types.ts';
import type { SessionRecord } from '../../domain/session.ts';
import type { Boundary } from '../boundary.ts';
import type { EventHub } from '../event-hub.ts';

/**
 * What the tools of one agent of a turn may do to the turn: know it, stop with it, and ask a
 * human. Nothing else of the runtime reaches them. Each agent (the turn's main agent, later each
 * child agent) gets a port of its own, carrying its agent id.
 */
export interface TurnToolPort {
  readonly sessionId: string;
  readonly turnId: string;
  /** null for the turn's main agent */
  readonly agentId: string | null;
  /** aborts when the turn is cancelled */
  readonly signal: AbortSignal;
  /** publishes a human request and waits for its answer; the turn is `waiting_for_input` meanwhile */
  askHuman(kind: HumanRequestKind, prompt: string, options: string[], check?: DecisionCheck): Promise<HumanDecision>;
}

/** How the port tells the turn's owner that the turn waits for a human, and that it goes on. */
interface WaitingReporter {
  waiting(): Promise<void>;
  resumed(): Promise<void>;
}

export interface ToolPortSources {
  sessionId: string;
  turnId: string;
  agentId: string | null;
  signal: AbortSignal;
  requests: RequestBroker;
  report: WaitingReporter;
  /** the turn claim's whileRunning: a request the database could not take lets the turn go (TurnClaim) */
  whileRunning<T>(work: () => Promise<T>): Promise<T>;
}

export function createToolPort(sources: ToolPortSources): TurnToolPort {
  const { sessionId, turnId, agentId, signal, requests, report, whileRunning } = sources;
  return {
    sessionId,
    turnId,
    agentId,
    signal,
    async askHuman(kind, prompt, options, check) {
      // A cancel that came while an earlier answer was being stored must not leave a request (and
      // the cancel) waiting forever: an aborted signal never fires 'abort' again.
      signal.throwIfAborted();
      let waitingWrite: Promise<void> = Promise.resolve();
      const answer = whileRunning(() =>
        requests.ask({ sessionId, turnId, agentId, kind, prompt, options }, () => {
          waitingWrite = report.waiting();
          waitingWrite.catch(() => {}); // awaited below; this only keeps a failed write from crashing the process
        }, signal, check),
      );
      // A turn that is no longer this instance's (taken over, lost, handed over) keeps its request
      // for the next owner; a cancel withdraws it.
      const onAbort = () => (signal.reason instanceof TurnClaimLost ? requests.letGo(turnId, signal.reason as Error) : requests.cancelTurn(turnId, new Error('cancelled')));
      signal.addEventListener('abort', onAbort, { once: true });
      let decision: HumanDecision;
      try {
        decision = await answer;
      } finally {
        signal.removeEventListener('abort', onAbort);
        // The waiting write lands before the running write or the terminal one, never after them.
        await waitingWrite;
      }
      if (!signal.aborted) await report.resumed();
      // a turn taken over meanwhile (the running write refused) runs nothing on the answer here
      signal.throwIfAborted();
      return decision;
    },
  };
}

/** What an agent of a turn needs to call tools. */
export interface TurnTools {
  specs(): ToolSpec[];
  execute(call: ToolCall): Promise<ToolCallResult>;
  planMode(): boolean;
}

/** Everything one agent's tools may use: the boundary, the session, the event hub and the agent's port. */
export interface TurnToolScope {
  boundary: Boundary;
  hub: EventHub;
  session: SessionRecord;
  port: TurnToolPort;
  /** the turn's change receipt: every call that may write runs inside it */
  receipt?: TurnReceipt;
}

/** Builds the tools of one agent (policy, approvals, execution); the composition root supplies it. */
export type TurnToolsFactory = (scope: TurnToolScope) => Promise<TurnTools>;
