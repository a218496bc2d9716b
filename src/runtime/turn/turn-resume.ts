/**
 * Resuming a turn this instance of a cluster took over (CONTRACT.md §18, docs/CLUSTER.md "Takeover
 * and resume"): the turn goes on here from the steps its former owners recorded (store/turn-steps.ts),
 * under the attempt the takeover gave it. A call of the newest recorded response whose result was
 * not recorded may have run, and is given to the model as interrupted, never run again; but a call
 * waiting for a human had not started, nor any after it: those run, and the call waits for the
 * request already published (RequestBroker.adopt). A request still unanswered proves it, whatever
 * the row says (an owner that resumed the turn stores `running` before it waits again, and may die
 * in between); an answered one only while the row still says waiting (a call approved goes on only
 * once the row says running: turn-runner.ts report).
 */
import type { Logger } from 'pino';
import type { Boundary } from '../boundary.ts';
import type { ActiveTurn, ActiveTurns } from './active-turns.ts';
import type { ResumedTurn, TurnClaim } from './turn-claim.ts';
import type { RequestBroker } from './requests.ts';
import type { TakenTurn } from '../../store/turn-leases.ts';
import { findTurn, readTurnText } from '../../store/turns.ts';
import { compileOutputSchema } from '../../agent/structured-output.ts';
import { findSession } from '../../store/sessions.ts';
import { readTurnSteps } from '../../store/turn-steps.ts';
import { newestOpenRequest, withdrawHumanRequestsBut } from '../../store/human-requests.ts';
import { unansweredCalls } from '../../agent/loop.ts';
import { ACTIVE_STATUSES } from '../../domain/turn-status.ts';

const NO_ATTACHMENTS = { images: [], files: [] };

export interface TurnResumptionDeps {
  boundary: Boundary;
  active: ActiveTurns;
  requests: RequestBroker;
  logger: Logger;
}

export class TurnResumption {
  constructor(private readonly deps: TurnResumptionDeps) {}

  /** Loads a turn just taken over and claims it here (`hold`): ready to run from its plan, or null when it is not ours to run. */
  async prepare(taken: TakenTurn, hold: (turn: ActiveTurn) => TurnClaim): Promise<ResumedTurn | null> {
    const { boundary, active, requests, logger } = this.deps;
    const { db } = boundary;
    const record = await findTurn(db, boundary.id, taken.id);
    // ended or taken again meanwhile: nothing of it is ours
    if (!record || record.attempt !== taken.attempt || !ACTIVE_STATUSES.includes(record.status)) return null;
    const session = await findSession(db, boundary.id, record.sessionId);
    if (!session) return null;
    const steps = await readTurnSteps(db, record.id);
    const unanswered = unansweredCalls(steps);
    const open = await newestOpenRequest(db, record.id);
    const waitedOn = open && (open.answer === null || record.status === 'waiting_for_input') ? open : null;
    // A child agent's request dies with the child: its spawn_agent call is interrupted like any other.
    const adopted = waitedOn && waitedOn.request.agentId === null ? waitedOn : null;
    await withdrawHumanRequestsBut(db, record.id, adopted?.request.id ?? null);
    const interrupted = new Set(adopted ? [] : unanswered.map((call) => call.callId));
    if (active.isBusy(session.id)) {
      logger.error({ turnId: record.id, sessionId: session.id }, 'a turn taken over finds its session busy here; left for its lease to run out');
      return null;
    }
    if (adopted) requests.adopt(adopted.request, adopted.answer);
    const outputSchema = (await readTurnText(db, record.id))?.outputSchema;
    // accepted at admission, so it compiles again
    const turn = active.reserve(record, session, NO_ATTACHMENTS, outputSchema ? await compileOutputSchema(JSON.parse(outputSchema)) : null);
    const claim = hold(turn);
    logger.warn({ turnId: record.id, attempt: record.attempt, steps: steps.length, interrupted: interrupted.size }, 'resuming a turn taken over');
    return { turn, claim, plan: { steps, interrupted } };
  }
}
