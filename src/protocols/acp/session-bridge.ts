import type { AgentContext, SessionUpdate } from '@agentclientprotocol/sdk';
import { isReplayReset, TERMINAL_TURN_EVENTS, type AgentdClient, type EventSubscription, type HumanRequest, type StreamItem } from '../../client/index.ts';
import { decisionOf, permissionOptions } from './permissions.ts';
import { SessionUpdates } from './session-updates.ts';

export interface ReplayOptions {
  /** turns that were terminal when the load began */
  storedTurns: ReadonlySet<string>;
}

/** What a bridge reports of its own troubles (never to standard output). */
export type Complain = (message: string, error: unknown) => void;

/**
 * One agentd session followed for one ACP connection: its events become `session/update`
 * notifications, in order; its human requests become `session/request_permission` requests to the
 * editor, answered back to agentd; the end of each turn settles whoever waits for it. Events
 * that arrive while `held` (a `session/load` replaying history) wait, so the live turn follows
 * the replay.
 */
export class SessionBridge {
  private readonly updates = new SessionUpdates();
  private readonly ended = new Map<string, string>();
  private readonly waiters = new Map<string, { resolve: (status: string) => void; reject: (error: Error) => void }>();
  /** counts `session/cancel`s, so a prompt whose turn was admitted after one cancels it */
  cancels = 0;
  private readonly asked = new Set<string>();
  private readonly active = new Set<string>();
  private readonly subscription: EventSubscription;
  private held: StreamItem[] | null = null;
  private streamEnded: Error | null = null;

  private constructor(
    private readonly client: AgentdClient,
    private readonly editor: AgentContext,
    readonly sessionId: string,
    private readonly complain: Complain,
    private readonly replay: ReplayOptions | null,
  ) {
    // From the start of the replay window when a live turn is to be shown whole, else live only.
    this.subscription = client.events({ sessionId, lastEventId: replay ? 0 : null });
    if (replay) this.held = [];
    void this.pump();
  }

  /**
   * A bridge whose event stream is open: every event of the session from now on is delivered.
   * With `replay` (a `session/load`) it holds everything back until `release()`, and the retained
   * events of turns already stored are dropped: the history replay shows those.
   */
  static async open(client: AgentdClient, editor: AgentContext, sessionId: string, complain: Complain, replay: ReplayOptions | null = null): Promise<SessionBridge> {
    const bridge = new SessionBridge(client, editor, sessionId, complain, replay);
    await bridge.subscription.opened;
    return bridge;
  }

  /** Delivers what was held back, then the live stream; asks the requests already waiting. */
  async release(): Promise<void> {
    const held = this.held ?? [];
    this.held = null;
    for (const item of held) await this.apply(item);
    await this.askPendingRequests();
  }

  /** Turns of the session known to be queued, running or waiting. */
  activeTurns(): string[] {
    return [...this.active];
  }

  noteActive(turnId: string): void {
    if (!this.ended.has(turnId)) this.active.add(turnId);
  }

  /** Resolves with the turn's terminal status once its end event came through; rejects when the event stream ends for good. */
  waitForEnd(turnId: string): Promise<string> {
    const status = this.ended.get(turnId);
    if (status) return Promise.resolve(status);
    if (this.streamEnded) return Promise.reject(this.streamEnded);
    return new Promise((resolve, reject) => this.waiters.set(turnId, { resolve, reject }));
  }

  close(): void {
    this.subscription.close();
  }

  private async pump(): Promise<void> {
    try {
      for await (const item of this.subscription) {
        if (this.held) this.held.push(item);
        else await this.apply(item);
      }
    } catch (error) {
      this.complain(`events of session ${this.sessionId} ended`, error);
      this.streamEnded = new Error(`agentd's event stream of the session ended: ${(error as Error)?.message ?? String(error)}`);
    }
    this.streamEnded ??= new Error("agentd's event stream of the session was closed");
    for (const waiter of this.waiters.values()) waiter.reject(this.streamEnded);
    this.waiters.clear();
  }

  private async apply(item: StreamItem): Promise<void> {
    if (isReplayReset(item)) return this.afterGap();
    if (item.turnId && this.replay?.storedTurns.has(item.turnId)) return;
    for (const update of this.updates.translate(item)) await this.send(update);
    if (item.type === 'turn.queued' || item.type === 'turn.started') this.noteActive(item.turnId!);
    else if (item.type === 'request.created') void this.ask(item.data);
    else if (TERMINAL_TURN_EVENTS.has(item.type) && item.turnId) this.turnEnded(item.turnId, item.type.slice('turn.'.length));
  }

  private async send(update: SessionUpdate): Promise<void> {
    try {
      await this.editor.notify('session/update', { sessionId: this.sessionId, update });
    } catch (error) {
      this.complain('a session/update could not be sent', error);
    }
  }

  private turnEnded(turnId: string, status: string): void {
    this.active.delete(turnId);
    this.ended.set(turnId, status);
    // the latest ends are enough to settle a waiter that registers late
    if (this.ended.size > 100) this.ended.delete(this.ended.keys().next().value!);
    this.waiters.get(turnId)?.resolve(status);
    this.waiters.delete(turnId);
  }

  /** Events were missed: whichever waited turn ended meanwhile is settled from its record. */
  private async afterGap(): Promise<void> {
    for (const turnId of [...this.active, ...this.waiters.keys()]) {
      try {
        const turn = await this.client.getTurn({ path: { id: turnId } });
        if (TERMINAL_TURN_EVENTS.has(`turn.${turn.status}`)) this.turnEnded(turnId, turn.status);
      } catch (error) {
        this.complain(`turn ${turnId} could not be read after a gap in events`, error);
      }
    }
    await this.askPendingRequests();
  }

  private async askPendingRequests(): Promise<void> {
    try {
      const { data } = await this.client.listRequests();
      for (const request of data.filter((candidate) => candidate.sessionId === this.sessionId).reverse()) void this.ask(request);
    } catch (error) {
      this.complain('pending requests could not be listed', error);
    }
  }

  /** The request as a permission dialog; the chosen option is agentd's decision. */
  private async ask(request: HumanRequest): Promise<void> {
    if (this.asked.has(request.id)) return;
    this.asked.add(request.id);
    this.noteActive(request.turnId);
    const toolCallId = (request.kind === 'tool_approval' || request.kind === 'root_access' ? this.updates.latestInProgress() : null) ?? `request-${request.id}`;
    try {
      const { outcome } = await this.editor.request('session/request_permission', {
        sessionId: this.sessionId,
        toolCall: { toolCallId, title: request.prompt, _meta: { agentd: { requestId: request.id, kind: request.kind } } },
        options: permissionOptions(request),
      });
      const answer = decisionOf(request, outcome);
      if (answer) await this.client.resolveRequest({ path: { id: request.id }, body: answer });
    } catch (error) {
      this.complain(`request ${request.id} was not answered`, error);
    }
  }
}
