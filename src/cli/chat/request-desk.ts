import type { Interface } from 'node:readline';
import { AgentdError, type AgentdClient, type HumanRequest } from '../../client/index.ts';
import { autoDecision, choiceFor, choicesOf, wordsQuestion, type AutoAnswer } from './approvals.ts';
import type { ChatOutput, RequestChoice } from './render.ts';
import type { StatusLine } from './status-line.ts';
import type { TerminalScreen } from './terminal-screen.ts';
import { describeError } from './errors.ts';

/** What the desk needs of the chat around it. */
export interface DeskHost {
  client: AgentdClient;
  output: ChatOutput;
  status: StatusLine;
  screen: TerminalScreen;
  lines: Interface;
  autoAnswer: AutoAnswer | null;
  /** piped: the next line read and not sent yet, taken as an answer */
  takeQueuedLine(): string | undefined;
  /** a turn runs (its status line comes back after an answer) */
  turnRunning(): boolean;
  /** the request could not be answered from the input: the chat looks at whether the input ended */
  unanswered(): void;
}

/**
 * The human requests of the chat's session: shown with their keys, answered with one key on a
 * terminal or by the next input line when piped, the words some answers take read after the key;
 * --yolo and --deny answer approvals unasked.
 */
export class RequestDesk {
  pending: { request: HumanRequest; choices: RequestChoice[] } | null = null;
  /** readline asks for words (an answer's value); aborted when its request goes away */
  private words: AbortController | null = null;

  constructor(private readonly host: DeskHost) {}

  /** words are being typed: keys belong to readline */
  get readingWords(): boolean {
    return this.words !== null;
  }

  ask(request: HumanRequest): void {
    if (this.pending?.request.id === request.id) return;
    const { host } = this;
    const auto = autoDecision(request, host.autoAnswer);
    if (auto) return void this.resolve(request, auto, undefined, host.autoAnswer === 'allow_once' ? '--yolo' : '--deny');
    const choices = choicesOf(request);
    this.pending = { request, choices };
    host.status.stop();
    host.output.request(request, choices);
    if (!this.answerFromInput()) host.unanswered();
  }

  /** request.resolved, or the turn ended: whatever was being asked goes away. */
  gone(requestId: string | null): void {
    if (requestId === null || this.pending?.request.id === requestId) this.pending = null;
    if (this.words && !this.pending) this.words.abort();
  }

  /** A key on a terminal while a request waits: an answer, never the start of one. */
  key(text: string | undefined): void {
    if (!this.pending) return;
    // readline took the key into its (hidden) line already
    clearTypedLine(this.host.lines);
    if (text !== undefined && this.pending.choices.some((choice) => choice.key === text)) void this.answer(text);
  }

  async answer(text: string): Promise<void> {
    const pending = this.pending;
    if (!pending) return;
    const choice = choiceFor(pending.choices, text);
    if (choice === undefined) {
      this.host.output.error(`answer with ${pending.choices.map((candidate) => `${candidate.key} (${candidate.label})`).join(', ')}`);
      if (!this.answerFromInput()) this.host.unanswered();
      return;
    }
    this.pending = null;
    let value: string | undefined;
    if (choice.asksWords) {
      const words = await this.askWords(wordsQuestion(choice.decision));
      if (words === null) return;
      value = words;
    }
    await this.resolve(pending.request, choice.decision, value);
  }

  abort(): void {
    this.words?.abort();
  }

  /** Piped: the line read after the question is its answer, though it was read before the question came. */
  private answerFromInput(): boolean {
    const next = this.host.takeQueuedLine();
    if (next === undefined) return false;
    void this.answer(next.trim());
    return true;
  }

  private async resolve(request: HumanRequest, decision: string, value: string | undefined, by?: string): Promise<void> {
    const { host } = this;
    try {
      await host.client.resolveRequest({ path: { id: request.id }, body: { decision, ...(value !== undefined ? { value } : {}) } });
      host.output.notice(`→ ${decision}${value ? `: ${value}` : ''}${by ? ` (${by})` : ''}`);
      if (host.turnRunning() && !this.pending) host.status.start(false);
    } catch (error) {
      host.output.error(describeError(error));
      // a refused answer (a raise not above spent) leaves the request waiting: ask it again
      if (error instanceof AgentdError && error.code === 'invalid_decision' && !this.pending && !by) this.ask(request);
    }
  }

  /** A line of words read by readline, visible as typed; null when the request went away first. */
  private askWords(question: string): Promise<string | null> {
    const queued = this.host.takeQueuedLine();
    if (queued !== undefined) return Promise.resolve(queued);
    const { screen, lines } = this.host;
    const words = new AbortController();
    this.words = words;
    screen.openInput();
    return new Promise<string | null>((resolve) => {
      const settle = (value: string | null) => {
        if (this.words === words) this.words = null;
        screen.closeInput();
        resolve(value);
      };
      words.signal.addEventListener('abort', () => settle(null), { once: true });
      lines.question(question, { signal: words.signal }, (answer) => settle(answer));
    });
  }
}

/** Empties readline's line (typed while hidden) without showing anything. */
export function clearTypedLine(lines: Interface): void {
  lines.write(null, { ctrl: true, name: 'e' });
  lines.write(null, { ctrl: true, name: 'u' });
}
