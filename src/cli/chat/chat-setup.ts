import type { Session } from '../../client/index.ts';
import type { AutoAnswer } from './approvals.ts';
import type { OutputStream } from './terminal-screen.ts';

/** What a chat is given: its terminal (or pipes), and what it starts with. */
export interface ChatTerminal {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: OutputStream;
  /** --json: where the events go, one JSON object a line (`output` then carries the notices) */
  events?: NodeJS.WritableStream;
}

export interface ChatSetup {
  /** a session to continue; null: one is created at the first prompt */
  session: Session | null;
  /** the directory a new session works in */
  cwd: string;
  /** the model of a new session; null: the server's default */
  model: string | null;
  /** where the chat talks to, for the header */
  describe: string;
  /** colours, Markdown, the status line and the picker (a terminal without NO_COLOR) */
  rich: boolean;
  /** --output-schema: given to every turn; its result is printed as one line of JSON */
  outputSchema?: Record<string, unknown> | null;
  /** --yolo (allow_once) or --deny: the answer to every approval of the run */
  autoAnswer?: AutoAnswer | null;
}

export interface ActiveTurn {
  id: string | null;
  cancelRequested: boolean;
  /** some of its answer or tools came through the stream */
  shown: boolean;
}

export interface QueuedLine {
  text: string;
  /** typed while a turn ran: not on screen yet */
  typedAside: boolean;
}
