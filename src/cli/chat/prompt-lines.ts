import type { Interface } from 'node:readline';
import { clearTypedLine } from './request-desk.ts';
import { isNewlineKey } from './terminal-keys.ts';

/**
 * Prompts of more than one line, out of what readline gives line by line: a line ending in `\`
 * continues on the next, and a bracketed paste (the terminal marks its start and end) is one
 * prompt however many lines it has. A pasted block stays out of the editable line: a placeholder
 * `[pasted N lines]` stands there, and is replaced by the text when the prompt is sent.
 */
export class PromptLines {
  private continued: string[] = [];
  private pasting: string[] | null = null;
  /** the line being entered was ended by Shift+Enter: more follows */
  private keyNewline = false;
  private readonly pastes = new Map<string, string>();

  /** A line readline entered: the prompt, complete, or null while more is to come. */
  line(line: string): string | null {
    if (this.pasting !== null) {
      this.pasting.push(line);
      return null;
    }
    if (this.keyNewline || line.endsWith('\\')) {
      this.continued.push(this.keyNewline ? line : line.slice(0, -1));
      this.keyNewline = false;
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

  /** Shift+Enter or Alt+Enter: the line so far is continued, as a trailing `\` would; true when it was that key. */
  newlineKey(key: { name?: string; meta?: boolean; shift?: boolean; sequence?: string }, lines: Interface): boolean {
    if (!isNewlineKey(key)) return false;
    // entered as Enter enters it, so that the line stays on the screen above the next one
    this.keyNewline = true;
    lines.write(null, { name: 'return' });
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
