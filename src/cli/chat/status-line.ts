import type { Session } from '../../client/index.ts';
import { inert, paint } from './style.ts';

const SPINNER = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
const TICK_MS = 120;

/**
 * What the session says it has used (CONTRACT §19). `spent` and `context` stay optional: a chat
 * may talk to a server older than them, and then shows the tokens from `usage` alone.
 */
type SessionFigures = Pick<Session, 'usage'> & Partial<Pick<Session, 'spent' | 'context' | 'model' | 'planMode' | 'cwd'>>;

/**
 * The line under a running turn: a spinner, what the turn is doing, how long it has run, the
 * tokens streamed so far (estimated: four characters a token) and the session's tokens, cost and
 * context as the server reports them, then what was typed meanwhile. Redrawn every 120 ms.
 */
export class StatusLine {
  private timer: NodeJS.Timeout | null = null;
  private startedAt = 0;
  private frame = 0;
  private state = 'starting';
  private streamedCharacters = 0;
  private figures: SessionFigures | null = null;
  private typed = '';
  private queued = 0;

  constructor(private readonly show: (text: string | null) => void) {}

  get running(): boolean {
    return this.timer !== null;
  }

  /** Shows the line; `fresh` starts the clock and the counts again (false: after a question was answered). */
  start(fresh = true): void {
    this.stop();
    if (fresh) {
      this.startedAt = Date.now();
      this.state = 'starting';
      this.streamedCharacters = 0;
    }
    this.timer = setInterval(() => this.draw(), TICK_MS);
    this.timer.unref();
    this.draw();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.show(null);
  }

  setState(state: string): void {
    this.state = state;
  }

  streamed(characters: number): void {
    this.streamedCharacters += characters;
  }

  session(session: SessionFigures): void {
    this.figures = session;
  }

  /** what the user typed while the turn runs, and how many lines wait to be sent */
  input(typed: string, queued: number): void {
    this.typed = typed;
    this.queued = queued;
    if (this.running) this.draw();
  }

  text(): string {
    const seconds = Math.floor((Date.now() - this.startedAt) / 1000);
    const parts = [`${SPINNER[this.frame % SPINNER.length]} ${inert(this.state).slice(0, 60)}`, `${seconds}s`];
    if (this.streamedCharacters > 0) parts.push(`↓ ~${compact(Math.ceil(this.streamedCharacters / 4))} tokens`);
    parts.push(...this.figureParts());
    let line = paint('dim', parts.join(' · '));
    if (this.queued > 0) line += paint('dim', ` · ${this.queued} queued`);
    if (this.typed !== '') line += ` ${paint('dim', '│ next ›')} ${inert(this.typed.length > 40 ? `…${this.typed.slice(-40)}` : this.typed)}`;
    else if (this.queued === 0) line += paint('dim', ' · type to queue the next prompt, Ctrl-C cancels');
    return line;
  }

  /** The footer pinned to the terminal's last row: model, mode, directory, tokens, cost, context. */
  footer(): string | null {
    const figures = this.figures;
    if (!figures) return null;
    const where = [figures.model, figures.planMode ? 'plan mode' : 'default mode', figures.cwd].filter((part): part is string => typeof part === 'string');
    const counts = this.figureParts().filter((part) => part !== 'plan mode');
    return paint('dim', `─ ${[...where.map((part) => inert(part)), ...counts].join(' · ')}`);
  }

  private figureParts(): string[] {
    const figures = this.figures;
    if (!figures) return [];
    const parts: string[] = [];
    if (figures.planMode) parts.push('plan mode');
    const tokens = figures.spent?.tokens ?? figures.usage.input + figures.usage.output;
    parts.push(`session ${compact(tokens)} tokens`);
    if (typeof figures.spent?.costUsd === 'number') parts.push(`$${figures.spent.costUsd.toFixed(figures.spent.costUsd < 1 ? 4 : 2)}`);
    const window = figures.context?.window;
    if (figures.context && window) parts.push(`context ${Math.round((100 * figures.context.usedTokens) / window)}% of ${compact(window)}`);
    return parts;
  }

  private draw(): void {
    this.frame++;
    this.show(this.text());
  }
}

function compact(count: number): string {
  if (count < 1000) return String(count);
  if (count < 1_000_000) return `${(count / 1000).toFixed(count < 10_000 ? 1 : 0)}k`;
  return `${(count / 1_000_000).toFixed(1)}M`;
}
