import type { Interface } from 'node:readline';
import { clearTypedLine } from './request-desk.ts';

/**
 * Prompts of more than one line, out of what readline gives line by line: a line ending in `\`
 * continues on the next, and a bracketed paste (the terminal marks its start and end) is one
 * prompt however many lines it has. A pasted block stays out of the editable line: a placeholder
 * `[pasted N lines]` stands there, and is replaced by the text when the prompt is sent.
 */
export class PromptLines {
  private continued: string[] = [];
  private pasting: string[] | null = null;
  private readonly pastes = new Map<string, string>();

  /** Escape sequences that turn bracketed paste on and off (a terminal that lacks it ignores them). */
  static readonly ENABLE_PASTE = '\u001b[?2004h';
  static readonly DISABLE_PASTE = '\u001b[?2004l';

  /** A line readline entered: the prompt, complete, or null while more is to come. */
  line(line: string): string | null {
    if (this.pasting !== null) {
      this.pasting.push(line);
      return null;
    }
    if (line.endsWith('\\')) {
      this.continued.push(line.slice(0, -1));
      return null;
    }
    const whole = [...this.continued, line].join('\n');
    this.continued = [];
    return this.expand(whole);
  }

  /** Lines continued with `\` so far (the prompt shows that more is expected). */
  get continuing(): boolean {
    return this.continued.length > 0;
  }

  /**
   * Alt+Enter (ESC CR, what a terminal set up as Claude Code's /terminal-setup does sends for
   * Shift+Enter): the line so far is continued, as a trailing `\` would; true when it was that key.
   */
  newlineKey(key: { name?: string; meta?: boolean; shift?: boolean }, lines: Interface): boolean {
    if (key.name !== 'return' || !(key.meta || key.shift)) return false;
    this.continued.push(lines.line ?? '');
    clearTypedLine(lines);
    return true;
  }

  /** The keys that mark a paste's start and end; true when `name` was one. At the end a long paste becomes its placeholder in readline's line. */
  pasteKey(name: string | undefined, lines: Interface): boolean {
    if (name === 'paste-start') this.pasting = [];
    else if (name === 'paste-end') {
      const placeholder = this.pasteEnd(lines.line ?? '');
      if (placeholder !== null) {
        clearTypedLine(lines);
        lines.write(`${placeholder} `);
      }
    } else return false;
    return true;
  }

  /**
   * The paste ended; `rest` is its last line, still in readline's line. A paste of one line stays
   * as typed (null); a longer one becomes a placeholder, returned for the editable line.
   */
  private pasteEnd(rest: string): string | null {
    const lines = [...(this.pasting ?? []), rest];
    this.pasting = null;
    if (lines.length === 1) return null;
    const placeholder = `[pasted ${lines.length} lines${this.pastes.size > 0 ? ` #${this.pastes.size + 1}` : ''}]`;
    this.pastes.set(placeholder, lines.join('\n'));
    return placeholder;
  }

  private expand(prompt: string): string {
    let text = prompt;
    for (const [placeholder, pasted] of this.pastes) text = text.replace(placeholder, () => pasted);
    this.pastes.clear();
    return text;
  }
}
