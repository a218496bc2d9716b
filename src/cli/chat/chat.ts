import { createInterface, type Interface } from 'node:readline';
import { AgentdError, isReplayReset, TERMINAL_TURN_EVENTS, type AgentdClient, type EventSubscription, type HumanRequest, type Session, type StreamItem } from '../../client/index.ts';
import { COMMANDS_HELP, runCommand } from './commands.ts';
import { PromptLine } from './prompt-line.ts';
import { ChatOutput } from './render.ts';

/** Options that need text typed after the key: the value of the resolve. */
const OPTIONS_WITH_TEXT = new Set(['custom', 'request_changes']);
const KEYS = '123456789abcdefghijklmnopqrstuvwxyz'.split('');
/** A line typed while the server restarts waits for it: about a minute of retries (5 s apart at most). */
const SUBMIT_RETRIES = 15;

export interface ChatTerminal {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
}

interface ActiveTurn {
  id: string | null;
  cancelRequested: boolean;
  /** some of its answer or tools came through the stream */
  shown: boolean;
}

const STREAMED_CONTENT = new Set(['response.text.delta', 'response.reasoning.delta', 'tool.updated', 'tool.finished']);

/**
 * One conversation: lines typed become turns (queued while one runs), the session's events are
 * rendered as they stream, human requests are answered with a key, Ctrl-C cancels the running
 * turn and otherwise ends the chat. Resolves when the chat ends.
 */
export class Chat {
  private readonly output: ChatOutput;
  private readonly lines: Interface;
  private readonly promptLine: PromptLine;
  private readonly queue: string[] = [];
  private active: ActiveTurn | null = null;
  private pending: { request: HumanRequest; keys: string[] } | null = null;
  private subscription: EventSubscription | null = null;
  private readonly finishedTurns = new Map<string, { status: string; error: string | null }>();
  private inputEnded = false;
  private busy = false;
  private connectionLost = false;
  /** aborted when the chat ends: a submit still retrying gives up */
  private readonly ending = new AbortController();
  private ended!: () => void;
  readonly done = new Promise<void>((resolve) => (this.ended = resolve));

  constructor(
    private readonly client: AgentdClient,
    private session: Session,
    terminal: ChatTerminal,
  ) {
    const interactive = Boolean(terminal.input.isTTY && terminal.output.isTTY);
    this.lines = createInterface({ input: terminal.input, output: terminal.output, terminal: interactive, prompt: '› ' });
    this.promptLine = new PromptLine(this.lines, terminal.output, () => !this.active && !this.pending);
    this.output = new ChatOutput((text) => this.promptLine.write(text), Boolean(terminal.output.isTTY));
    this.lines.on('line', (line) => this.accept(line));
    this.lines.on('SIGINT', () => this.interrupt());
    this.lines.on('close', () => {
      this.inputEnded = true;
      void this.pump();
    });
    if (interactive) terminal.input.on('keypress', (text: string | undefined) => this.keypress(text));
  }

  start(describe: string): void {
    this.output.notice(`agentd chat · ${describe}`);
    this.output.notice(`session ${this.session.id} · ${this.session.model} · ${COMMANDS_HELP}`);
    this.listen();
    void this.showPendingRequests();
    this.prompt();
  }

  /** Ctrl-C: cancel the running turn; with none (or already cancelling) end the chat. */
  interrupt(): void {
    if (this.active && !this.active.cancelRequested) {
      this.active.cancelRequested = true;
      this.output.notice('cancelling… (Ctrl-C again to exit)');
      if (this.active.id) void this.cancel(this.active.id);
      return;
    }
    this.finish();
  }

  private accept(line: string): void {
    this.promptLine.accepted();
    if (this.pending) return void this.answer(line.trim());
    if (line.trim() === '') return this.prompt();
    this.queue.push(line);
    void this.pump();
  }

  /** Takes the next queued line when nothing runs. */
  private async pump(): Promise<void> {
    if (this.busy || this.active || this.pending) {
      if (this.inputEnded && this.pending && !this.lines.terminal) {
        this.output.error('input ended while a request waits for an answer');
        this.finish();
      }
      return;
    }
    const line = this.queue.shift();
    if (line === undefined) {
      if (this.inputEnded) this.finish();
      return;
    }
    this.busy = true;
    try {
      if (line.trim().startsWith('/') && !['/compact', '/clear'].includes(line.trim())) await runCommand(line, this.commandContext());
      else await this.submit(line);
    } catch (error) {
      this.output.error(describeError(error));
    } finally {
      this.busy = false;
    }
    if (!this.active) this.prompt();
    void this.pump();
  }

  private async submit(input: string): Promise<void> {
    const active: ActiveTurn = { id: null, cancelRequested: false, shown: false };
    this.active = active;
    try {
      const turn = await this.client.submitTurn(this.session.id, input, { retries: SUBMIT_RETRIES, signal: this.ending.signal });
      active.id = turn.id;
    } catch (error) {
      this.active = null;
      throw error;
    }
    if (active.cancelRequested) void this.cancel(active.id);
    const finished = this.finishedTurns.get(active.id);
    if (finished) this.turnEnded(active.id, finished.status, finished.error);
  }

  private async cancel(turnId: string): Promise<void> {
    try {
      await this.client.cancelTurn({ path: { id: turnId } });
    } catch (error) {
      this.output.error(describeError(error));
    }
  }

  private listen(lastEventId: number | null = null): void {
    const subscription = this.client.events({
      sessionId: this.session.id,
      lastEventId,
      onReconnect: () => {
        if (!this.connectionLost) this.output.notice('connection lost; reconnecting…');
        this.connectionLost = true;
      },
      onOpen: () => {
        if (this.connectionLost) this.output.notice('reconnected');
        this.connectionLost = false;
      },
    });
    this.subscription = subscription;
    void (async () => {
      try {
        for await (const item of subscription) {
          if (subscription !== this.subscription) continue;
          // A failed refetch (the server went away again) must not end the listening.
          await this.render(item).catch((error: unknown) => this.output.error(describeError(error)));
        }
      } catch (error) {
        if (subscription === this.subscription) this.output.error(`events: ${describeError(error)}`);
      }
    })();
  }

  private async render(item: StreamItem): Promise<void> {
    if (isReplayReset(item)) return this.refetchAfterGap();
    // The end of a turn learnt by a refetch comes before the replay of its events: shown once is enough.
    if (item.turnId && this.finishedTurns.has(item.turnId)) return;
    if (this.active && STREAMED_CONTENT.has(item.type)) this.active.shown = true;
    switch (item.type) {
      case 'response.text.delta':
        return this.output.answerDelta(item.data.text);
      case 'response.reasoning.delta':
        return this.output.reasoningDelta(item.data.text);
      case 'tool.updated':
        return this.output.toolCall(item.data.name, item.data.arguments);
      case 'tool.finished':
        return this.output.toolOutput(item.data.output);
      case 'warning':
      case 'provider.limit':
        return this.output.notice(`warning: ${item.data.text}`);
      case 'response.restarted':
        return this.output.notice(`the model starts its answer again (${item.data.reason})`);
      case 'model.context.reset':
        return this.output.notice(`context ${item.data.reason === 'clear' ? 'cleared' : 'compacted'}`);
      case 'request.created':
        return this.ask(item.data);
      case 'request.resolved':
        if (this.pending?.request.id === item.data.requestId) this.pending = null;
        return;
      case 'turn.completed':
      case 'turn.failed':
      case 'turn.cancelled': {
        const status = item.type.slice('turn.'.length);
        if (item.turnId) this.turnEnded(item.turnId, status, item.data.error);
        return;
      }
    }
  }

  /**
   * After replay.reset the running turn may have ended unseen (a line sent while the server was
   * restarting can finish before the stream is back). Its answer is shown from the record when
   * none of it was streamed; the replayed events of a turn ended here are then skipped.
   */
  private async refetchAfterGap(): Promise<void> {
    this.output.notice('some events were missed; refreshing');
    const active = this.active;
    if (active?.id) {
      const turn = await this.client.getTurn({ path: { id: active.id } });
      if (TERMINAL_TURN_EVENTS.has(`turn.${turn.status}`)) {
        if (!active.shown) {
          const { output } = await this.client.getTurnResult({ path: { id: turn.id } });
          if (output?.assistantText) this.output.answerDelta(output.assistantText);
        } else {
          this.output.notice(`part of the answer was missed; /resume ${this.session.id} shows it whole`);
        }
        this.turnEnded(turn.id, turn.status, turn.error);
      }
    }
    return this.showPendingRequests();
  }

  private turnEnded(turnId: string, status: string, error: string | null): void {
    this.finishedTurns.set(turnId, { status, error });
    if (this.active?.id !== turnId) return;
    this.active = null;
    this.pending = null;
    this.output.turnEnded(status, error);
    this.prompt();
    void this.pump();
  }

  private ask(request: HumanRequest): void {
    if (this.pending?.request.id === request.id) return;
    const keys = request.options.map((_, index) => KEYS[index]);
    this.pending = { request, keys };
    this.output.request(request, keys);
    if (this.inputEnded) void this.pump();
  }

  private async showPendingRequests(): Promise<void> {
    const { data } = await this.client.listRequests();
    const mine = data.filter((request) => request.sessionId === this.session.id);
    if (mine.length > 0) this.ask(mine[mine.length - 1]);
  }

  /** A single key answers the pending request (on a terminal, no Enter needed). */
  private keypress(text: string | undefined): void {
    if (!this.pending || text === undefined || !this.pending.keys.includes(text)) return;
    // readline already put the key into its line; take it out again.
    setImmediate(() => this.lines.write(null, { ctrl: true, name: 'u' }));
    void this.answer(text);
  }

  private async answer(text: string): Promise<void> {
    const pending = this.pending;
    if (!pending) return;
    const index = pending.keys.indexOf(text);
    const decision = index >= 0 ? pending.request.options[index] : pending.request.options.find((option) => option === text);
    if (decision === undefined) return this.output.error(`answer with ${pending.keys.slice(0, pending.request.options.length).join(', ')}`);
    this.pending = null;
    let value: string | undefined;
    if (OPTIONS_WITH_TEXT.has(decision)) value = await new Promise<string>((resolve) => this.lines.question('your words: ', resolve));
    try {
      await this.client.resolveRequest({ path: { id: pending.request.id }, body: { decision, ...(value !== undefined ? { value } : {}) } });
      this.output.notice(`→ ${decision}`);
    } catch (error) {
      this.output.error(describeError(error));
    }
  }

  private commandContext() {
    return {
      client: this.client,
      output: this.output,
      session: this.session,
      switchTo: (session: Session) => {
        const lastEventId = this.subscription?.lastEventId ?? null;
        this.subscription?.close();
        this.session = session;
        this.listen(lastEventId);
      },
      submit: (input: string) => this.submit(input),
      quit: () => this.finish(),
    };
  }

  private prompt(): void {
    this.promptLine.show();
  }

  private finish(): void {
    this.ending.abort();
    this.subscription?.close();
    this.subscription = null;
    this.lines.close();
    this.ended();
  }
}

function describeError(error: unknown): string {
  if (error instanceof AgentdError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
