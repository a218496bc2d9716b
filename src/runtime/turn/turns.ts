import { ApiError } from '../../domain/errors.ts';
import { userCommandText } from '../../agent/user-command.ts';
import { EVENT_TEXT_LIMIT } from '../../domain/event-text.ts';
import type { TurnReverts } from './turn-reverts.ts';
import { normalizeUuid, nowIso, uuidv7 } from '../../domain/ids.ts';
import type { CreateTurnBody } from '../../api/schemas.ts';
import * as turnsTable from '../../store/turns.ts';
import { readTurnAgents } from '../../store/turn-agents.ts';
import type { TurnRecord } from '../../domain/turn.ts';
import { decodeAttachments, inputDigest, userMessageItem, type DecodedAttachments } from '../../workspace/attachments.ts';
import type { Boundary } from '../boundary.ts';
import type { ActiveTurns } from './active-turns.ts';
import type { SessionService } from '../session/sessions.ts';
import type { TurnRunner } from './turn-runner.ts';
import type { TurnLeases } from './turn-leases.ts';
import type { ClaimedAdmission, TurnClaims } from './turn-claim.ts';
import { TurnClaimLost } from './claim-lost.ts';
import type { AgentRecord } from '../../domain/projection.ts';
import type { TraceParent } from '../../telemetry/tracing.ts';
import { ACTIVE_STATUSES } from '../../domain/turn-status.ts';
import type { EventHub } from '../event-hub.ts';
import { SteerReceipts } from './steer-receipts.ts';
import type { ClusterSteers } from './cluster-steers.ts';
import type { StoredSteer } from '../../store/turn-steers.ts';
import { compileOutputSchema, OutputSchemaRefused, type OutputSchema } from '../../agent/structured-output.ts';
import { createHash } from 'node:crypto';

/**
 * Turn admission, idempotency, lookup and cancel (CONTRACT.md §5). Once a turn's `queued` row is
 * stored, the turn runner owns it; this service only asks the runner to queue or cancel it.
 */
export class TurnService {
  constructor(
    private readonly boundary: Boundary,
    private readonly sessions: SessionService,
    private readonly active: ActiveTurns,
    private readonly runner: TurnRunner,
    private readonly hub: EventHub,
    /** how a turn is stored and claimed: alone, or with this instance's lease on it (--cluster) */
    private readonly claims: TurnClaims,
    /** --cluster: turns held by other instances are read and cancelled through the database */
    private readonly leases: TurnLeases | null = null,
    private readonly reverts: TurnReverts | null = null,
    /** --cluster: steers travel through the database to the turn's owner */
    private readonly clusterSteers: ClusterSteers | null = null,
  ) {}

  private readonly steers = new SteerReceipts();

  /** POST /v1/turns/:id/revert (CONTRACT.md §20). */
  async revert(rawId: string): Promise<{ reverted: string[] }> {
    const turn = await this.get(rawId);
    if (!this.reverts) throw new ApiError('revert_unavailable', 'this server keeps no turn contents');
    return this.reverts.revert(turn);
  }

  /**
   * The child agents of a turn for GET /v1/turns/:id/agents; 409 once this process no longer holds
   * it. With --cluster, a turn held elsewhere answers the view its owner stored (none stored: it
   * started no child agent).
   */
  async agents(rawId: string): Promise<AgentRecord[]> {
    const turn = await this.get(rawId);
    const agents = this.active.agentsOf(turn.id);
    if (agents) return agents;
    if (this.leases) {
      const stored = await readTurnAgents(this.boundary.db, turn.id);
      return stored === null ? [] : (JSON.parse(stored) as AgentRecord[]);
    }
    throw new ApiError('turn_agents_unavailable', 'this process no longer holds the turn\'s agents');
  }

  /**
   * CreateTurn: a new queued turn or, with `steer`, input joining the session's active turn.
   * `traceParent`: the submitting request's span, so the turn's span continues its trace.
   */
  async submit(rawSessionId: string, body: CreateTurnBody, traceParent?: TraceParent): Promise<TurnAdmission> {
    const session = await this.sessions.get(rawSessionId);
    const digest = withShell(withOutputSchema(inputDigest(body.input, body.images, body.files), body.outputSchema), body.shell);
    const clientRequestId = body.clientRequestId?.toLowerCase();
    if (clientRequestId) {
      const known = this.admittedInMemory(session.id, clientRequestId);
      if (known) return this.replayIdempotent(known, digest);
      const stored = await turnsTable.findTurnByClientRequestId(this.boundary.db, session.id, clientRequestId);
      if (stored) return this.replayIdempotent({ turn: stored, delivery: 'queued' }, digest);
      const steered = this.clusterSteers && (await this.clusterSteers.find(session.id, clientRequestId));
      if (steered) {
        const replayed = await this.replayClusterSteer(steered, digest);
        if (replayed) return replayed;
      }
    }
    if (body.input.trim() === '' && !(body.images?.length)) throw new ApiError('empty_input', 'input is blank and there is no image');
    if (body.steer && body.files?.length) throw new ApiError('invalid_attachment', 'a steer carries no files: attach them to a turn of their own', { entry: 'files[0]' });
    if (body.steer && body.outputSchema) throw new ApiError('invalid_output_schema', 'a steer carries no outputSchema: give it to a turn of its own');
    if (body.shell) admitUserCommand(body);
    const outputSchema = body.outputSchema === undefined ? null : await admitOutputSchema(body.outputSchema);
    const attachments = decodeAttachments(body.images, body.files);
    if (body.steer) {
      const steered = await this.steer(session.id, body.input, attachments, digest, clientRequestId);
      if (steered) return steered;
    }

    // From here to the reservation there is no await: one active turn per session.
    if (clientRequestId) {
      const raced = this.admittedInMemory(session.id, clientRequestId);
      if (raced) return this.replayIdempotent(raced, digest);
    }
    if (this.active.isBusy(session.id)) throw new ApiError('session_busy', 'the session has an active turn');
    if (this.reverts?.isReverting(session.id)) throw new ApiError('session_busy', 'a turn of the session is being reverted');
    const id = uuidv7();
    const text = { ...(body.shell ? userCommandText(body.input) : { input: body.input, userText: body.input }), outputSchema: outputSchema?.json ?? null };
    const record: TurnRecord = {
      id,
      boundaryId: this.boundary.id,
      sessionId: session.id,
      clientRequestId: clientRequestId ?? id,
      inputDigest: digest,
      status: 'queued',
      createdAt: nowIso(),
      startedAt: null,
      finishedAt: null,
      error: null,
      // Only the row keeps the whole text; the runner reads it back when it was cut here.
      ...turnsTable.boundTurnText(text),
      output: null,
      attempt: 1,
    };
    const turn = this.active.reserve(record, session, attachments, outputSchema);
    let admitted: ClaimedAdmission;
    try {
      admitted = await this.claims.admit(turn, text);
      turn.session = admitted.session;
    } catch (error) {
      this.active.drop(turn);
      if (clientRequestId) {
        const existing = await turnsTable.findTurnByClientRequestId(this.boundary.db, session.id, clientRequestId);
        if (existing) return this.replayIdempotent({ turn: existing, delivery: 'queued' }, digest);
      }
      throw error;
    }
    return { turn: await this.runner.enqueue(turn, admitted, traceParent), delivery: 'queued' };
  }

  /**
   * Gives the input to the session's active turn (queued, running or waiting), for its next model
   * request. A turn already ending takes no more: the steer waits for its end and comes back null,
   * to be admitted as a turn of its own. Null at once when the session has no active turn here.
   */
  private async steer(sessionId: string, input: string, attachments: DecodedAttachments, digest: string, clientRequestId: string | undefined): Promise<TurnAdmission | null> {
    if (this.clusterSteers) {
      const outcome = await this.clusterSteers.steer(sessionId, input, userMessageItem(input, attachments, []), digest, clientRequestId);
      if (outcome === null) return null;
      if ('status' in outcome) return this.replayClusterSteer(outcome, digest);
      return { turn: await this.get(outcome.turnId), delivery: 'steered' };
    }
    for (;;) {
      if (clientRequestId) {
        const raced = this.admittedInMemory(sessionId, clientRequestId);
        if (raced) return this.replayIdempotent(raced, digest);
      }
      const active = this.active.ofSession(sessionId);
      if (!active) return null;
      if (active.steering.offer(userMessageItem(input, attachments, []))) {
        if (clientRequestId) this.steers.add(sessionId, clientRequestId, { turnId: active.record.id, inputDigest: digest });
        this.hub.emitText('turn.steered', sessionId, active.record.id, input);
        return { turn: { ...active.record }, delivery: 'steered' };
      }
      await active.finished;
    }
  }
  async get(rawId: string): Promise<TurnRecord> {
    const id = normalizeUuid(rawId);
    if (id) {
      const held = this.active.recordOf(id);
      // --cluster: a turn queued here may have been started by an instance with room (the row says so at once, this process at its next renewal)
      if (held && !(this.leases && held.status === 'queued')) return held;
      const stored = await turnsTable.findTurn(this.boundary.db, this.boundary.id, id);
      const found = held && stored && stored.attempt === held.attempt ? held : (stored ?? held);
      if (found) return found;
    }
    throw new ApiError('turn_not_found', 'no such turn');
  }

  async list(rawSessionId: string | null): Promise<TurnRecord[]> {
    const sessionId = rawSessionId === null ? null : (normalizeUuid(rawSessionId) ?? rawSessionId);
    const stored = await turnsTable.listTurns(this.boundary.db, this.boundary.id, sessionId, 200);
    // The record this process holds is the newest truth: an active turn's row says `queued` until
    // its terminal write, and a turn that ended during the read is in the terminal cache.
    return stored.map((record) => this.active.recordOf(record.id) ?? record);
  }

  /** Queued, running or waiting becomes cancelled; the answer is the final, durable record. */
  async cancel(rawId: string): Promise<TurnRecord> {
    const record = await this.get(rawId);
    const active = this.active.get(record.id);
    if (active) {
      await this.runner.cancel(active);
      const after = await this.get(record.id);
      // --cluster: a queued turn another instance took meanwhile was not this one's to cancel
      if (this.leases && ACTIVE_STATUSES.includes(after.status)) return (await this.leases.cancelElsewhere(this.boundary.id, record.id)) ?? after;
      return after;
    }
    // With --cluster, a turn this instance does not hold may run on another (or ran on one now gone).
    if (this.leases && ACTIVE_STATUSES.includes(record.status)) return (await this.leases.cancelElsewhere(this.boundary.id, record.id)) ?? record;
    return record;
  }

  async cancelAll(): Promise<void> {
    await Promise.all(this.active.ids().map((id) => this.cancel(id).catch(() => undefined)));
  }

  /** SIGTERM in a live cluster: every turn held here stops without an end, for another instance to resume. */
  async handOverAll(): Promise<void> {
    await Promise.all(this.active.ids().map((id) => {
      const turn = this.active.get(id);
      if (!turn) return undefined;
      this.runner.letGo(turn, new TurnClaimLost('handed_over'));
      return turn.finished;
    }));
  }

  /** A turn or steer this process admitted with this clientRequestId, as its first answer said. */
  private admittedInMemory(sessionId: string, clientRequestId: string): KnownAdmission | undefined {
    const steer = this.steers.find(sessionId, clientRequestId);
    if (steer) return { turnId: steer.turnId, inputDigest: steer.inputDigest, delivery: 'steered' };
    const active = this.active.ofSession(sessionId);
    if (active && active.record.clientRequestId === clientRequestId) return { turn: active.record, delivery: 'queued' };
    return undefined;
  }

  /**
   * A retry of a steer a cluster stored (on any instance): answered as the first was, once its
   * turn's owner has decided; null when it was refused, once the turn has ended, for the retry to
   * go on like the first (whose own turn, admitted first, answers it by clientRequestId).
   */
  private async replayClusterSteer(steer: StoredSteer, digest: string): Promise<TurnAdmission | null> {
    if (steer.inputDigest !== digest) throw new ApiError('idempotency_conflict', 'this clientRequestId was used with a different input');
    const outcome = await this.clusterSteers!.settle(steer);
    return outcome === null ? null : { turn: await this.get(outcome.turnId), delivery: 'steered' };
  }

  private async replayIdempotent(known: KnownAdmission, digest: string): Promise<TurnAdmission> {
    const firstDigest = 'turn' in known ? known.turn.inputDigest : known.inputDigest;
    if (firstDigest !== digest) throw new ApiError('idempotency_conflict', 'this clientRequestId was used with a different input');
    const turn = 'turn' in known ? (this.active.recordOf(known.turn.id) ?? { ...known.turn }) : await this.get(known.turnId);
    return { turn, delivery: known.delivery };
  }
}

/** The schema of a CreateTurn checked and compiled, or 422 `invalid_output_schema` saying why not (CONTRACT.md §22). */
async function admitOutputSchema(schema: unknown): Promise<OutputSchema> {
  try {
    return await compileOutputSchema(schema);
  } catch (error) {
    if (error instanceof OutputSchemaRefused) throw new ApiError('invalid_output_schema', error.message);
    throw error;
  }
}

/** A `!command` turn's body (CONTRACT.md §24), or 400 `invalid_json` naming what it cannot carry. */
function admitUserCommand(body: CreateTurnBody): void {
  const refuse = (path: string, message: string) => {
    throw new ApiError('invalid_json', `invalid request body at ${path}: ${message}`, [{ path, message }]);
  };
  // `!` and the command are the turn's user text, which fits the event-text bound (CONTRACT.md §8) whole
  if (body.input.length > MAX_USER_COMMAND_CHARS) refuse('/input', `a shell command is at most ${MAX_USER_COMMAND_CHARS} characters`);
  if (body.steer) refuse('/steer', 'a shell command is a turn of its own, never a steer');
  if (body.images?.length || body.files?.length) refuse(body.images?.length ? '/images' : '/files', 'a shell command carries no attachments');
  if (body.outputSchema) refuse('/outputSchema', 'a shell command has no answer to shape');
}

const MAX_USER_COMMAND_CHARS = EVENT_TEXT_LIMIT - 1;

function withShell(digest: string, shell: boolean | undefined): string {
  return shell ? createHash('sha256').update(digest).update('\0shell').digest('hex') : digest;
}

/** The idempotency digest covers the outputSchema: the same clientRequestId with another schema is another request. */
function withOutputSchema(digest: string, schema: unknown): string {
  if (schema === undefined) return digest;
  return createHash('sha256').update(digest).update('\0outputSchema\0').update(JSON.stringify(schema)).digest('hex');
}

/** How CreateTurn admitted the input: a turn of its own, or steered into the active one. */
type Delivery = 'queued' | 'steered';

export interface TurnAdmission {
  /** the turn the input is part of, as it is now */
  turn: TurnRecord;
  delivery: Delivery;
}

type KnownAdmission = { turn: TurnRecord; delivery: 'queued' } | { turnId: string; inputDigest: string; delivery: 'steered' };
