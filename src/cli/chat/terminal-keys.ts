import { PassThrough } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { OutputStream } from './terminal-screen.ts';

/**
 * The terminal modes an interactive chat turns on, and off again at exit: bracketed paste (a paste
 * is marked, so that it is one prompt) and xterm's modifyOtherKeys at level 1, under which a
 * terminal that has it (xterm, tmux with `extended-keys on`, iTerm2, WezTerm, foot…) sends
 * Shift+Enter as a sequence of its own instead of the plain CR of Enter. Level 1 leaves the keys
 * that have a usual encoding alone (Ctrl-C stays ETX); a terminal that lacks a mode ignores it.
 */
const MODES_ON = '\u001b[?2004h\u001b[>4;1m';
const MODES_OFF = '\u001b[?2004l\u001b[>4m';

/** Shift+Enter as readline reports it once extendedKeys() has rewritten xterm's form. */
const SHIFT_ENTER = '\u001b[13;2u';
/** xterm's modifyOtherKeys form, CSI 27;modifier;code~, which readline cannot parse. */
const XTERM_MODIFIED_KEY = /\u001b\[27;(\d+);(\d+)~/g;

export type KeyInput = NodeJS.ReadableStream & { isTTY?: boolean };

/** Turns the modes on; returns what turns them off. */
export function enableTerminalModes(output: OutputStream): () => void {
  output.write(MODES_ON);
  return () => output.write(MODES_OFF);
}

/**
 * The terminal's input as readline reads it: xterm's CSI 27;m;k~ rewritten to the CSI k;m u form
 * (kitty's and tmux's) that readline parses as one key, instead of leaving `13~` typed in the line.
 */
export function extendedKeys(input: NodeJS.ReadStream | KeyInput): KeyInput {
  const keys = new PassThrough({ encoding: 'utf8' });
  const text = new StringDecoder('utf8');
  input.on('data', (chunk: Buffer | string) => keys.write((typeof chunk === 'string' ? chunk : text.write(chunk)).replace(XTERM_MODIFIED_KEY, '\u001b[$2;$1u')));
  input.on('end', () => keys.end());
  const tty = input as Partial<NodeJS.ReadStream>;
  return Object.assign(keys, {
    isTTY: tty.isTTY,
    setRawMode: (mode: boolean) => tty.setRawMode?.(mode),
    // readline pauses its input when it closes: the terminal's stream must stop too, or the process stays
    pause: () => (input.pause(), PassThrough.prototype.pause.call(keys)),
    resume: () => (input.resume(), PassThrough.prototype.resume.call(keys)),
  });
}

/** Shift+Enter (or Alt+Enter, ESC CR: what a terminal set up for Claude Code sends for it) continues the prompt. */
export function isNewlineKey(key: { name?: string; meta?: boolean; shift?: boolean; sequence?: string }): boolean {
  return key.sequence === SHIFT_ENTER || (key.name === 'return' && Boolean(key.meta || key.shift));
}
