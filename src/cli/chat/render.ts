import type { HumanRequest } from '../../client/index.ts';
import { MarkdownLines } from './markdown.ts';
import { inert, paint, type Style } from './style.ts';
import { fitTail, type TerminalScreen } from './terminal-screen.ts';
import { diffLine, diffLines, patchOf, planningView, toolCallLine, toolOutputLines } from './tool-preview.ts';

type Stream = 'answer' | 'reasoning' | null;

/** One key of a human request: an advertised option, or `deny` with words asked after the key. */
export interface RequestChoice {
  key: string;
  decision: string;
  label: string;
  /** the words typed after the key go in `value` */
  asksWords: boolean;
}

/**
 * Everything the chat prints. On a colour terminal (`rich`): Markdown rendered line by line as the
 * answer streams, the unfinished line, a picker and the status line live at the bottom, colours.
 * Otherwise (a pipe, or NO_COLOR) plain whole lines a script can read: no escape sequence, no
 * status line, reasoning lines prefixed.
 */
export class ChatOutput {
  private stream: Stream = null;
  private pendingLine = '';
  private markdown = new MarkdownLines();
  private status: string | null = null;
  private panel: string[] = [];

  constructor(
    private readonly screen: TerminalScreen,
    readonly rich: boolean,
  ) {}

  answerDelta(text: string): void {
    this.streamText('answer', text);
  }

  reasoningDelta(text: string): void {
    this.streamText('reasoning', text);
  }

  /** A whole answer at once (a resumed session's turns, a refetched result). */
  answer(text: string): void {
    this.answerDelta(text);
    this.endStream();
  }

  toolCall(name: string, argumentsText: string | null): void {
    const planning = planningView(name, argumentsText);
    if (planning) return this.planning(planning);
    const patch = patchOf(argumentsText);
    if (patch === null) return this.line(this.style('cyan', toolCallLine(name, argumentsText)));
    this.line(this.style('cyan', `⏺ ${name}`));
    for (const line of diffLines(patch, this.rich)) this.line(`  ${line}`);
  }

  /** A planning tool's call: its header, then its plan as Markdown or its steps. */
  private planning(view: { header: string; lines: string[]; markdown: boolean }): void {
    this.line(this.style('cyan', inert(view.header)));
    const markdown = new MarkdownLines();
    for (const line of view.lines) this.line(`  ${view.markdown && this.rich ? markdown.render(inert(line)) : inert(line)}`);
  }

  toolOutput(output: string): void {
    const { summary, lines } = toolOutputLines(output);
    if (summary) this.line(`  ${this.style('dim', `⎿ ${summary}`)}`);
    for (const line of lines) this.line(`  ${this.style('dim', '│')} ${line}`);
  }

  request(request: HumanRequest, choices: RequestChoice[]): void {
    this.line(this.style('yellow', `? ${request.kind}`));
    const patch = request.kind === 'tool_approval' ? patchStart(request.prompt) : -1;
    const promptLines = inert(request.prompt).split('\n');
    // a plan to approve is Markdown: rendered as the answer is
    const markdown = request.kind === 'plan_exit' && this.rich ? new MarkdownLines() : null;
    promptLines.forEach((line, index) => {
      const inPatch = patch >= 0 && index >= patch;
      this.line(`  ${inPatch && this.rich ? diffLine(line) : markdown ? markdown.render(line) : line}`);
    });
    this.line(this.style('bold', choices.map((choice) => `[${choice.key}] ${inert(choice.label)}`).join('  ')));
  }

  notice(text: string): void {
    this.line(this.style('dim', inert(text)));
  }

  error(text: string): void {
    this.line(this.style('red', inert(text)));
  }

  /** What the user sent, as it appears in the transcript (a line typed aside, a resumed turn). */
  userLine(text: string): void {
    this.line(this.style('bold', `› ${inert(text)}`));
  }

  turnEnded(status: string, error: string | null): void {
    this.endStream();
    if (status === 'completed') return;
    this.line(this.style(status === 'cancelled' ? 'yellow' : 'red', `[${status}${error && error !== status ? `: ${inert(error)}` : ''}]`));
  }

  /** The status line below the answer while a turn runs (a colour terminal only). */
  setStatus(text: string | null): void {
    this.status = text;
    this.refreshLive();
  }

  /** Lines shown above the status line until replaced (the session picker). */
  setPanel(lines: string[]): void {
    this.panel = lines;
    this.refreshLive();
  }

  /** Ends streamed text so the next output starts on its own line. */
  endStream(): void {
    if (this.stream === null) return;
    const stream = this.stream;
    this.stream = null;
    if (this.pendingLine !== '') this.commitStreamed(stream, this.pendingLine);
    this.pendingLine = '';
    if (stream === 'answer') this.markdown = new MarkdownLines();
    this.refreshLive();
  }

  line(text: string): void {
    this.endStream();
    this.screen.commit(`${text}\n`);
  }

  private streamText(stream: Exclude<Stream, null>, raw: string): void {
    if (this.stream !== stream) this.endStream();
    this.stream = stream;
    const lines = (this.pendingLine + inert(raw.replace(/\r\n/g, '\n'))).split('\n');
    this.pendingLine = lines.pop() ?? '';
    for (const line of lines) this.commitStreamed(stream, line);
    this.refreshLive();
  }

  private commitStreamed(stream: Exclude<Stream, null>, line: string): void {
    if (!this.rich) return this.screen.commit(`${stream === 'reasoning' ? 'reasoning: ' : ''}${line}\n`);
    this.screen.commit(`${stream === 'reasoning' ? paint('dim', paint('italic', line)) : this.markdown.render(line)}\n`);
  }

  private refreshLive(): void {
    if (!this.rich) return;
    const live: string[] = [];
    if (this.pendingLine !== '') {
      const shown = fitTail(this.pendingLine, this.screen.columns() - 1);
      live.push(this.stream === 'reasoning' ? paint('dim', shown) : shown);
    }
    live.push(...this.panel);
    if (this.status !== null) live.push(this.status);
    this.screen.setLive(live);
  }

  private style(style: Style, text: string): string {
    return this.rich ? paint(style, text) : text;
  }
}

/** The line index where a tool_approval prompt's patch begins, or -1. */
function patchStart(prompt: string): number {
  return prompt.split('\n').findIndex((line) => line.trimStart().startsWith('*** Begin Patch'));
}
