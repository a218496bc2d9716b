import { clearLine, cursorTo, type Interface } from 'node:readline';

/**
 * The `›` prompt on a terminal. Output that arrives while it waits for a line (a reconnect notice,
 * a refreshed request) replaces the prompt line, and the prompt comes back below it with what was
 * typed so far.
 */
export class PromptLine {
  private shown = false;

  constructor(
    private readonly lines: Interface,
    private readonly stream: NodeJS.WritableStream,
    /** whether the chat waits for a line now (no turn running, no question asked) */
    private readonly waitsForLine: () => boolean,
  ) {}

  show(): void {
    if (!this.lines.terminal || !this.waitsForLine()) return;
    this.lines.prompt(true);
    this.shown = true;
  }

  /** a line was entered: the prompt is no longer waiting on screen */
  accepted(): void {
    this.shown = false;
  }

  write(text: string): void {
    if (!this.shown) return void this.stream.write(text);
    clearLine(this.stream, 0);
    cursorTo(this.stream, 0);
    this.stream.write(text);
    this.shown = false;
    if (text.endsWith('\n')) this.show();
  }
}
