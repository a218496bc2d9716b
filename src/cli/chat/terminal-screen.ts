import { Writable } from 'node:stream';
import type { Interface } from 'node:readline';
import stringWidth from 'string-width';

/** A stream the chat writes to: a terminal has columns, a pipe has none. */
export type OutputStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number };

/** Erase in display (what readline's refresh and the live region use): it also wipes the footer row. */
const ERASES_BELOW = /\u001b\[[02]?J/;

/**
 * The bottom of the screen and who may write there. Finished lines are committed above; below
 * them a live region (the line being streamed, a picker, the status line) is redrawn in place,
 * each of its lines cut to one row so it can be erased exactly. The readline prompt writes through
 * a gate: while a turn runs the gate is shut, so keys typed then are kept by readline without
 * being echoed into the answer. The footer keeps the terminal's last row: a scroll region
 * (DECSTBM) makes everything else scroll above it; it is set again when the terminal is resized
 * and taken away at exit.
 */
export class TerminalScreen {
  private live: string[] = [];
  private promptShown = false;
  private lines: Interface | null = null;
  /** readline's writes reach the terminal only while it owns the bottom line */
  private inputVisible = true;
  private footer: string | null = null;
  /** the rows of the scroll region above the footer, once it is set */
  private regionRows = 0;
  private readonly unpinAtExit = () => this.unpin();
  private readonly repin = () => this.pin();

  /** what readline writes to: the terminal, through the gate */
  readonly readlineOutput: Writable;

  constructor(private readonly stream: OutputStream) {
    this.readlineOutput = new Writable({
      write: (chunk: Buffer | string, _encoding, done) => {
        if (this.inputVisible) this.write(String(chunk));
        done();
      },
    });
    Object.assign(this.readlineOutput, { isTTY: stream.isTTY });
    Object.defineProperty(this.readlineOutput, 'columns', { get: () => this.columns() });
  }

  attach(lines: Interface): void {
    this.lines = lines;
  }

  /** Writes finished lines (each ending in a newline) above the live region or the prompt. */
  commit(text: string): void {
    if (this.promptShown) {
      this.write('\r\u001b[2K');
      this.write(text);
      this.lines?.prompt(true);
      return;
    }
    this.erase();
    this.write(text);
    this.draw();
  }

  /** Replaces the live region (no-op on a plain output: callers only set it on a colour terminal). */
  setLive(lines: string[]): void {
    if (this.promptShown) return;
    if (lines.length === this.live.length && lines.every((line, index) => line === this.live[index])) return;
    this.erase();
    this.live = lines;
    this.draw();
  }

  /** The prompt takes the bottom line: the live region goes, readline writes again. */
  showPrompt(): void {
    if (!this.lines?.terminal) return;
    this.erase();
    this.live = [];
    this.inputVisible = true;
    this.promptShown = true;
    this.lines.prompt(true);
  }

  /** Readline asks its own question (words for an answer): visible, without the `›` prompt state. */
  openInput(): void {
    this.erase();
    this.inputVisible = true;
    this.promptShown = false;
  }

  /** A line was entered or a turn started: what is typed from now on is kept, not shown. */
  closeInput(): void {
    this.promptShown = false;
    this.inputVisible = !this.lines?.terminal;
  }

  /** Leaves the cursor on a fresh line below everything (at exit). */
  release(): void {
    this.erase();
    this.live = [];
    if (this.promptShown) this.stream.write('\n');
    this.promptShown = false;
    this.unpin();
  }

  /**
   * The footer, pinned to the last row (null: none). A terminal too small for it, or an output
   * that is no terminal, shows none.
   */
  setFooter(text: string | null): void {
    if (!this.stream.isTTY) return;
    this.footer = text;
    if (text === null) return this.unpin();
    if (this.regionRows === 0) this.pin();
    else this.drawFooter();
  }

  columns(): number {
    return this.stream.columns && this.stream.columns > 0 ? this.stream.columns : 80;
  }

  private erase(): void {
    if (this.live.length === 0) return;
    this.write(`\r${this.live.length > 1 ? `\u001b[${this.live.length - 1}A` : ''}\u001b[J`);
  }

  private draw(): void {
    if (this.live.length === 0) return;
    const width = this.columns() - 1;
    this.stream.write(this.live.map((line) => fit(line, width)).join('\n'));
  }

  /** Writes `text`, then the footer again when `text` erased it. */
  private write(text: string): void {
    this.stream.write(text);
    if (this.regionRows > 0 && ERASES_BELOW.test(text)) this.drawFooter();
  }

  /** The scroll region above the footer's row (setting it homes the cursor: it is saved around it), and the footer. */
  private pin(): void {
    const rows = this.stream.rows ?? 0;
    if (this.footer === null || rows < 3) return this.unpin();
    if (this.regionRows === 0) {
      // the cursor leaves the last row first (a line is scrolled up when it is there): the footer takes it
      this.stream.write('\n\u001b[A');
      (this.stream as NodeJS.WriteStream).on?.('resize', this.repin);
      process.once('exit', this.unpinAtExit);
    } else if (this.regionRows !== rows - 1) {
      // resized: the old footer row, if still on screen, is emptied
      this.stream.write(`\u001b7\u001b[${this.regionRows + 1};1H\u001b[2K\u001b8`);
    }
    this.regionRows = rows - 1;
    this.stream.write(`\u001b7\u001b[1;${this.regionRows}r\u001b8`);
    this.drawFooter();
  }

  private drawFooter(): void {
    if (this.footer === null) return;
    this.stream.write(`\u001b7\u001b[${this.regionRows + 1};1H\u001b[2K${fit(this.footer, this.columns() - 1)}\u001b8`);
  }

  /** The whole screen scrolls again; the footer's row is emptied. */
  private unpin(): void {
    if (this.regionRows === 0) return;
    this.stream.write(`\u001b7\u001b[r\u001b[${this.regionRows + 1};1H\u001b[2K\u001b8`);
    this.regionRows = 0;
    (this.stream as NodeJS.WriteStream).off?.('resize', this.repin);
    process.off('exit', this.unpinAtExit);
  }
}

/**
 * Cuts a line to `width` columns: a styled line (status, picker) keeps its start and loses its
 * styles when cut; the streaming line is cut by its writer (fitTail), keeping its end.
 */
function fit(line: string, width: number): string {
  if (stringWidth(line) <= width) return line;
  let head = '';
  for (const character of line.replace(/\u001b\[[0-9;]*m/g, '')) {
    if (stringWidth(`${head}${character}…`) > width) break;
    head += character;
  }
  return `${head}…`;
}

/** The end of a plain line that fits `width` columns, after an ellipsis (the line being streamed). */
export function fitTail(line: string, width: number): string {
  if (stringWidth(line) <= width) return line;
  let tail = '';
  for (const character of [...line].reverse()) {
    if (stringWidth(`…${character}${tail}`) > width) break;
    tail = character + tail;
  }
  return `…${tail}`;
}
