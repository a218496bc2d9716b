import { createInterface, type Interface } from 'node:readline';
import { AgentdError, isReplayReset, TERMINAL_TURN_EVENTS, type AgentdClient, type EventSubscription, type Session, type StreamItem } from '../../client/index.ts';
import { COMMANDS_HELP, completeCommand, runCommand, steerWords, type CommandContext } from './commands.ts';
import { ChatOutput } from './render.ts';
import { SessionPicker, type PickerKey } from './session-picker.ts';
import { showRecentTurns } from './sessions.ts';
import { showEvent } from './event-view.ts';
import { PromptLines } from './prompt-lines.ts';
import { enableTerminalModes, extendedKeys } from './terminal-keys.ts';
import { turnBody } from './turn-body.ts';
import { FilePicker } from './file-picker.ts';
import { clearTypedLine, RequestDesk } from './request-desk.ts';
import { describeError } from './errors.ts';
import { followSession } from './session-events.ts';
import { autoAnswerNotice, UNANSWERED } from './approvals.ts';
import { StatusLine } from './status-line.ts';
import { TerminalScreen } from './terminal-screen.ts';
import { WORKSPACE_REFUSALS, workspaceRefusal } from './preflight.ts';
import type { ActiveTurn, ChatSetup, ChatTerminal, QueuedLine } from './chat-setup.ts';

export type { ChatSetup, ChatTerminal } from './chat-setup.ts';

/** A line typed while the server restarts waits for it: about a minute of retries (5 s apart at most). */
const SUBMIT_RETRIES = 15;

const STREAMED_CONTENT = new Set(['response.text.delta', 'response.reasoning.delta', 'tool.updated', 'tool.finished']);

/**
 * One conversation: lines typed become turns (queued while one runs, kept off the screen until
 * sent), the session's events are rendered as they stream, human requests are answered with a
 * key, Ctrl-C cancels the running turn and otherwise ends the chat. `done` resolves with the exit
 * code when the chat ends. The session is created at the first prompt, so a chat that ends before
 * one leaves nothing behind.
 */
export class Chat {
  private readonly screen: TerminalScreen;
  private readonly output: ChatOutput;
  private readonly status: StatusLine;
  /** --json: the events, one JSON object a line */
  private readonly events: NodeJS.WritableStream | null;
  private readonly lines: Interface;
  private readonly queue: QueuedLine[] = [];
  private readonly promptLines = new PromptLines();
  private modesOff: () => void = () => undefined;
  private session: Session | null;
  private active: ActiveTurn | null = null;
  private readonly desk: RequestDesk;
  private picker: { picker: SessionPicker; done: (session: Session | null) => void } | null = null;
  private subscription: EventSubscription | null = null;
  private readonly finishedTurns = new Map<string, { status: string; error: string | null }>();
  /** sessions this chat sent a turn to (a session made at start and never used is deleted at exit) */
  readonly sessionsWithTurns = new Set<string>();
  private inputEnded = false;
  private busy = false;
  /** steers sent and not answered yet: nothing new is submitted meanwhile */
  private steering = 0;
  /** a steer that came too late for its turn became this turn of its own: the next to follow */
  private steeredTurnId: string | null = null;
  private finished = false;
  private givingUp = false;
  /** lines read before the session's events are followed wait: a turn sent sooner could end unseen */
  private started = false;
  /** piped: 1 once a turn failed or was cancelled (or a line was refused), 2 once the server could not be reached or input ended on an unanswered request */
  private failure = 0;
  /** aborted when the chat ends: a submit still retrying gives up */
  private readonly ending = new AbortController();
  private ended!: (code: number) => void;
  readonly done = new Promise<number>((resolve) => (this.ended = resolve));

  constructor(
    private readonly client: AgentdClient,
    private readonly setup: ChatSetup,
    terminal: ChatTerminal,
  ) {
    this.session = setup.session;
    this.events = terminal.events ?? null;
    const interactive = Boolean(terminal.input.isTTY && terminal.output.isTTY);
    this.screen = new TerminalScreen(terminal.output);
    const input = interactive ? extendedKeys(terminal.input) : terminal.input;
    const files = new FilePicker(setup.cwd, (lines) => lines.forEach((line) => this.output.notice(line)));
    this.lines = createInterface({ input, output: this.screen.readlineOutput, terminal: interactive, prompt: '› ', ...(interactive ? { completer: (line: string) => files.completeLine(line) ?? completeCommand(line) } : {}) });
    this.screen.attach(this.lines);
    this.output = new ChatOutput(this.screen, setup.rich);
    this.status = new StatusLine((text) => this.output.setStatus(setup.rich ? text : null));
    this.desk = new RequestDesk({
      client, output: this.output, status: this.status, screen: this.screen, lines: this.lines,
      autoAnswer: setup.autoAnswer ?? null,
      takeQueuedLine: () => (this.lines.terminal ? undefined : this.queue.shift()?.text),
      turnRunning: () => this.active !== null,
      unanswered: () => void (this.inputEnded && this.pump()),
    });
    this.lines.on('line', (line) => this.accept(line));
    this.lines.on('SIGINT', () => this.interrupt());
    this.lines.on('close', () => {
      this.inputEnded = true;
      void this.pump();
    });
    if (interactive) {
      this.modesOff = enableTerminalModes(terminal.output);
      input.on('keypress', (text: string | undefined, key: PickerKey | undefined) => this.keypress(text, key ?? {}));
    }
  }

  async start(): Promise<void> {
    const session = this.session;
    const what = session ? `session ${session.id} · ${session.model}` : `new session on ${this.setup.model ?? 'the default model'}`;
    for (const line of [`agentd chat · ${this.setup.describe}`, `${what} · cwd ${session?.cwd ?? this.setup.cwd}`, COMMANDS_HELP]) this.output.notice(line);
    if (this.setup.autoAnswer) this.output.notice(autoAnswerNotice(this.setup.autoAnswer));
    if (session) {
      try {
        await this.switchTo(session);
      } catch (error) {
        this.output.error(describeError(error));
      }
    }
    this.started = true;
    this.prompt();
    void this.pump();
  }

  /** Ctrl-C: leave the picker; cancel the running turn; with none (or already cancelling) end the chat. */
  interrupt(): void {
    if (this.picker) return this.closePicker(null);
    if (this.active && !this.active.cancelRequested) {
      this.active.cancelRequested = true;
      this.output.notice('cancelling… (Ctrl-C again to exit)');
      if (this.active.id) void this.cancel(this.active.id);
      return;
    }
    this.finish(0);
  }

  private accept(entered: string): void {
    if (this.picker) return;
    // On a terminal a request is answered by its key alone; a piped line is the answer.
    if (this.desk.pending) return this.lines.terminal ? undefined : void this.desk.answer(entered.trim());
    const line = this.promptLines.line(entered);
    if (line === null) return this.continuePrompt();
    this.lines.setPrompt('› ');
    const typedAside = this.active !== null || this.busy;
    this.screen.closeInput();
    if (line.trim() === '') return typedAside ? undefined : this.prompt();
    const words = steerWords(line);
    if (words && this.active?.id && this.session) return void this.steer(this.session, words);
    this.queue.push({ text: line, typedAside });
    this.status.input('', this.queue.length);
    void this.pump();
  }

  /** Takes the next queued line when nothing runs. */
  private async pump(): Promise<void> {
    if (this.finished || !this.started) return;
    if (this.steeredTurnId && !this.active) return this.follow(this.steeredTurnId);
    if (this.busy || this.active || this.desk.pending || this.picker || this.steering > 0) {
      if (this.inputEnded && this.desk.pending && !this.lines.terminal) void this.giveUpUnanswered();
      return;
    }
    const next = this.queue.shift();
    if (next === undefined) {
      if (this.inputEnded) this.finish(0);
      return;
    }
    this.busy = true;
    this.status.input(this.lines.line ?? '', this.queue.length);
    try {
      if (next.typedAside && this.lines.terminal) this.output.userLine(next.text);
      const trimmed = next.text.trim();
      if (trimmed.startsWith('/') && !['/compact', '/clear'].includes(trimmed)) await runCommand(trimmed, this.commandContext());
      else await this.submit(next.text);
    } catch (error) {
      this.output.error(describeError(error));
      this.failure = Math.max(this.failure, error instanceof AgentdError ? 1 : 2);
    } finally {
      this.busy = false;
    }
    if (!this.active && this.queue.length === 0) this.prompt();
    void this.pump();
  }

  /** Piped input ended with a request waiting: the turn is cancelled (it would wait for ever) and the chat ends with 2. */
  private async giveUpUnanswered(): Promise<void> {
    if (this.givingUp) return;
    this.givingUp = true;
    // the cancelled turn's end may be heard before the cancel's answer, and end the chat first
    this.failure = 2;
    this.output.error(UNANSWERED);
    if (this.active?.id) await this.cancel(this.active.id);
    this.finish(2);
  }

  private async submit(input: string): Promise<void> {
    const session = await this.ensureSession();
    if (!session) return;
    const active: ActiveTurn = { id: null, cancelRequested: false, shown: false };
    this.active = active;
    this.screen.closeInput();
    this.status.start();
    this.status.input(this.lines.line ?? '', this.queue.length);
    this.sessionsWithTurns.add(session.id);
    try {
      const body = turnBody(input, this.setup, (note) => this.output.notice(note));
      const turn = await this.client.submitTurn(session.id, body, { retries: SUBMIT_RETRIES, signal: this.ending.signal });
      active.id = turn.id;
    } catch (error) {
      this.active = null;
      this.status.stop();
      throw error;
    }
    if (active.cancelRequested) void this.cancel(active.id);
    const finished = this.finishedTurns.get(active.id);
    if (finished) this.turnEnded(active.id, finished.status, finished.error);
  }

  /**
   * `/steer words` while a turn runs: sent at once with `steer` (CONTRACT.md §19), so the model
   * gets the words before its next request. When the turn ended first, the server made them a turn
   * of its own, which the chat follows once the running one is over.
   */
  private async steer(session: Session, words: string): Promise<void> {
    this.steering++;
    try {
      const turn = await this.client.submitTurn(session.id, { input: words, steer: true }, { retries: SUBMIT_RETRIES, signal: this.ending.signal });
      if (turn.delivery === 'steered') this.output.notice(`↳ steered into the running turn: ${words}`);
      else {
        this.output.notice(`↳ the turn had ended; sent as a turn of its own: ${words}`);
        this.steeredTurnId = turn.id;
      }
    } catch (error) {
      this.output.error(describeError(error));
    } finally {
      this.steering--;
    }
    void this.pump();
  }

  /** Makes a turn the chat did not submit itself (a late steer's) the one it shows. */
  private follow(turnId: string): void {
    this.steeredTurnId = null;
    this.active = { id: turnId, cancelRequested: false, shown: false };
    this.status.start();
    const finished = this.finishedTurns.get(turnId);
    if (finished) this.turnEnded(turnId, finished.status, finished.error);
  }

  /** The chat's session; a new one (in the chat's directory) at the first prompt. */
  private async ensureSession(): Promise<Session | null> {
    if (this.session) return this.session;
    let session: Session;
    try {
      session = await this.client.createSession({ body: { cwd: this.setup.cwd, ...(this.setup.model ? { model: this.setup.model } : {}) } });
    } catch (error) {
      if (error instanceof AgentdError && WORKSPACE_REFUSALS.has(error.code)) {
        this.output.error(workspaceRefusal(this.setup.cwd, error).message);
        this.finish(2);
        return null;
      }
      throw error;
    }
    this.session = session;
    await this.listen();
    this.output.notice(`session ${session.id} · ${session.model} · cwd ${session.cwd}`);
    return session;
  }

  private async cancel(turnId: string): Promise<void> {
    await this.client.cancelTurn({ path: { id: turnId } }).catch((error: unknown) => this.finished || this.output.error(describeError(error)));
  }

  /** Follows the session's events; resolves once the stream is open (or after a while regardless). */
  private listen(lastEventId: number | null = null): Promise<void> {
    const following = followSession(this.client, this.session!.id, lastEventId, this.output, {
      render: (item) => this.render(item),
      current: (subscription) => subscription === this.subscription,
      ended: () => this.finished,
    });
    this.subscription = following.subscription;
    return following.opened;
  }

  private async render(item: StreamItem): Promise<void> {
    if (isReplayReset(item)) {
      this.events?.write(`${JSON.stringify(item)}\n`);
      return this.refetchAfterGap();
    }
    // The end of a turn learnt by a refetch comes before the replay of its events: shown once is enough.
    if (item.turnId && this.finishedTurns.has(item.turnId)) return;
    if (this.active && STREAMED_CONTENT.has(item.type)) this.active.shown = true;
    this.events?.write(`${JSON.stringify(item)}\n`);
    // a tool may have changed the session (plan mode entered or left): the footer says so at once
    if (item.type === 'tool.finished') void this.refreshFigures();
    if (showEvent(item, { output: this.output, status: this.status, resultOnly: Boolean(this.setup.outputSchema) && !this.setup.rich })) return;
    switch (item.type) {
      case 'request.created':
        return this.desk.ask(item.data);
      case 'request.resolved':
        this.desk.gone(item.data.requestId);
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
          if (output?.assistantText) this.output.answer(output.assistantText);
        } else {
          this.output.notice(`part of the answer was missed; /resume ${this.session?.id} shows it whole`);
        }
        this.turnEnded(turn.id, turn.status, turn.error);
      }
    }
    return this.showPendingRequests();
  }

  private turnEnded(turnId: string, status: string, error: string | null): void {
    this.finishedTurns.set(turnId, { status, error });
    if (this.active?.id !== turnId) return;
    if (status !== 'completed') this.failure = Math.max(this.failure, 1);
    this.active = null;
    this.desk.gone(null);
    this.status.stop();
    this.output.turnEnded(status, error);
    void this.refreshFigures();
    if (this.queue.length === 0) this.prompt();
    void this.pump();
  }

  /** The session's tokens (and cost and context, where the server reports them) for the status line. */
  private async refreshFigures(): Promise<void> {
    const session = this.session;
    if (!session || !this.setup.rich) return;
    try {
      this.status.session(await this.client.getSession({ path: { id: session.id } }));
      this.screen.setFooter(this.status.footer());
    } catch {
      // the figures are a nicety; the next turn's end tries again
    }
  }

  private async showPendingRequests(): Promise<void> {
    const { data } = await this.client.listRequests();
    const mine = data.filter((request) => request.sessionId === this.session?.id);
    if (mine.length > 0) this.desk.ask(mine[mine.length - 1]);
  }

  private keypress(text: string | undefined, key: PickerKey): void {
    if (this.finished) return;
    if (this.promptLines.pasteKey(key.name, this.lines)) return;
    if (!this.active && !this.busy && !this.desk.pending && this.promptLines.newlineKey(key, this.lines)) return;
    if (this.picker) {
      const outcome = this.picker.picker.key(text, key);
      if (outcome === 'cancel') return this.closePicker(null);
      if (outcome) return this.closePicker(outcome.picked);
      return this.output.setPanel(this.picker.picker.lines());
    }
    if (this.desk.readingWords) return;
    if (this.desk.pending) return this.desk.key(text);
    if (this.active || this.busy) this.status.input(this.lines.line ?? '', this.queue.length);
  }

  private openPicker(sessions: Session[], filter: string): Promise<Session | null> {
    const picker = new SessionPicker(sessions, filter, this.session?.id ?? null);
    return new Promise((resolve) => {
      this.picker = { picker, done: resolve };
      this.output.setPanel(picker.lines());
    });
  }

  private closePicker(session: Session | null): void {
    const picker = this.picker;
    if (!picker) return;
    this.picker = null;
    this.output.setPanel([]);
    clearTypedLine(this.lines);
    picker.done(session);
  }

  private async switchTo(session: Session): Promise<void> {
    const lastEventId = this.subscription?.lastEventId ?? null;
    this.subscription?.close();
    this.session = session;
    await this.listen(lastEventId);
    await showRecentTurns(this.client, session, this.output);
    void this.refreshFigures();
    await this.showPendingRequests();
  }

  private commandContext(): CommandContext {
    return {
      client: this.client,
      output: this.output,
      session: this.session,
      cwd: this.setup.cwd,
      interactive: this.lines.terminal && this.setup.rich,
      switchTo: (session) => this.switchTo(session),
      update: (session) => {
        this.session = session;
        void this.refreshFigures();
      },
      pick: (sessions, filter) => this.openPicker(sessions, filter),
      submit: (input) => this.submit(input),
      quit: () => this.finish(0),
    };
  }

  /** A line continued with `\\` (or a paste's line): the next one follows under a `…` prompt. */
  private continuePrompt(): void {
    if (!this.lines.terminal || this.active || this.busy || !this.promptLines.continuing) return;
    this.lines.setPrompt('… ');
    this.screen.showPrompt();
  }

  private prompt(): void {
    if (this.finished || this.active || this.desk.pending || this.picker || this.busy) return;
    this.screen.showPrompt();
  }

  private finish(code: number): void {
    if (this.finished) return;
    this.finished = true;
    // a script reads the exit status: 0 only when every turn completed
    if (!this.lines.terminal) code = Math.max(code, this.failure);
    this.ending.abort();
    this.desk.abort();
    this.subscription?.close();
    this.subscription = null;
    this.status.stop();
    this.screen.release();
    this.modesOff();
    this.lines.close();
    this.ended(code);
  }
}
