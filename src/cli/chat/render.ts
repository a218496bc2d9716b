import type { HumanRequest } from '../../client/index.ts';

type Stream = 'answer' | 'reasoning' | null;

const STYLES = { dim: [2, 22], bold: [1, 22], cyan: [36, 39], yellow: [33, 39], red: [31, 39], green: [32, 39] } as const;
type Style = keyof typeof STYLES;

/** How many lines of a tool's output the chat shows; the rest is counted. */
const OUTPUT_LINES = 3;
const LINE_WIDTH = 160;

/**
 * Everything the chat prints. On a terminal: colours and streamed text; otherwise plain lines a
 * script can read (streamed text is collected into whole lines, reasoning lines are prefixed).
 */
export class ChatOutput {
  private stream: Stream = null;
  private pendingLine = '';

  constructor(
    private readonly write: (text: string) => void,
    readonly terminal: boolean,
  ) {}

  answerDelta(text: string): void {
    this.streamText('answer', text);
  }

  reasoningDelta(text: string): void {
    this.streamText('reasoning', text);
  }

  toolCall(name: string, argumentsText: string | null): void {
    this.line(`${this.style('cyan', `⏺ ${name}`)} ${oneLine(argumentsText ?? '')}`);
  }

  toolOutput(output: string): void {
    const lines = output.replace(/\s+$/, '').split('\n');
    const shown = lines.slice(0, OUTPUT_LINES).map((line) => `  ${this.style('dim', `│ ${oneLine(line)}`)}`);
    if (lines.length > OUTPUT_LINES) shown.push(`  ${this.style('dim', `│ … ${lines.length - OUTPUT_LINES} more lines`)}`);
    for (const line of shown) this.line(line);
  }

  request(request: HumanRequest, keys: string[]): void {
    this.line(this.style('yellow', `? ${request.kind}`));
    for (const line of inert(request.prompt).split('\n')) this.line(`  ${line}`);
    this.line(this.style('bold', request.options.map((option, index) => `[${keys[index]}] ${inert(option)}`).join('  ')));
  }

  notice(text: string): void {
    this.line(this.style('dim', inert(text)));
  }

  error(text: string): void {
    this.line(this.style('red', inert(text)));
  }

  turnEnded(status: string, error: string | null): void {
    this.endStream();
    if (status === 'completed') return;
    this.line(this.style(status === 'cancelled' ? 'yellow' : 'red', `[${status}${error && error !== status ? `: ${inert(error)}` : ''}]`));
  }

  /** Ends streamed text so the next output starts on its own line. */
  endStream(): void {
    if (this.stream === null) return;
    if (this.terminal) {
      this.write(this.stream === 'reasoning' ? `${code('dim', 1)}\n` : '\n');
    } else if (this.pendingLine !== '') {
      this.write(`${this.stream === 'reasoning' ? 'reasoning: ' : ''}${this.pendingLine}\n`);
    }
    this.pendingLine = '';
    this.stream = null;
  }

  line(text: string): void {
    this.endStream();
    this.write(`${text}\n`);
  }

  private streamText(stream: Exclude<Stream, null>, raw: string): void {
    const text = inert(raw.replace(/\r\n/g, '\n'));
    if (this.stream !== stream) this.endStream();
    if (!this.terminal) {
      const lines = (this.pendingLine + text).split('\n');
      this.pendingLine = lines.pop() ?? '';
      for (const line of lines) this.write(`${stream === 'reasoning' ? 'reasoning: ' : ''}${line}\n`);
      this.stream = stream;
      return;
    }
    if (this.stream !== stream && stream === 'reasoning') this.write(code('dim', 0));
    this.stream = stream;
    this.write(text);
  }

  private style(style: Style, text: string): string {
    return this.terminal ? `${code(style, 0)}${text}${code(style, 1)}` : text;
  }
}

function code(style: Style, which: 0 | 1): string {
  return `\u001b[${STYLES[style][which]}m`;
}

/**
 * Text from the server (model output, tool output, prompts) is shown, never obeyed: escape
 * sequences and other control characters could clear the screen, fake a prompt or reach the
 * clipboard, so each becomes a visible ^X.
 */
export function inert(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (character) => `^${String.fromCharCode((character.charCodeAt(0) + 64) % 128)}`);
}

function oneLine(text: string): string {
  const flat = inert(text).replace(/\s+/g, ' ').trim();
  return flat.length > LINE_WIDTH ? `${flat.slice(0, LINE_WIDTH - 1)}…` : flat;
}
