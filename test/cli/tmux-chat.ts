import { execFileSync } from 'node:child_process';
import { chatCommand } from './chat-support.ts';

/** `agentd chat` in a detached 150×50 tmux session: a real terminal, read back from its screen. */
export interface TmuxChat {
  /** starts `agentd chat --url <url>` in `cwd` and waits for its prompt; the session prints CHAT-EXITED-<code> when the chat ends */
  start(url: string, cwd: string, options?: StartOptions): Promise<void>;
  /** runs `agentd chat ARGS` in `cwd` as a shell command line: `before` and `after` go around it (`true |`, `< /dev/null`); waits for nothing */
  run(args: string[], cwd: string, options?: StartOptions & { before?: string; after?: string }): void;
  /** types into the chat (tmux send-keys: text, or key names such as Enter and C-c) */
  send(...keys: string[]): void;
  /** pastes `text` as a terminal does (tmux paste-buffer -p: bracketed when the program asked for it) */
  paste(text: string): void;
  /** the last 200 lines of the screen; with `escapes`, the colours and attributes as SGR sequences */
  screen(options?: { escapes?: boolean }): string;
  /** polls the screen until `test` matches it, and returns it */
  waitForScreen(test: RegExp, timeoutMs?: number): Promise<string>;
  /** resizes the terminal, as a person dragging its window does */
  resize(columns: number, rows: number): void;
  /** ends the tmux session, if it is still there */
  kill(): void;
}

interface StartOptions {
  /** more arguments after --url */
  args?: string[];
  /** environment variables for the chat, e.g. NO_COLOR */
  env?: Record<string, string>;
}

const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

/**
 * `joinWrappedLines` reads a long line wrapped by the terminal as one line (and keeps trailing
 * spaces); `extendedKeys` runs it in a tmux server with `extended-keys on` (S-Enter is sent as a
 * key of its own to a program that asks for modifyOtherKeys); `program` runs another agentd's chat (e.g. `['/path/node_modules/.bin/agentd', 'chat']`)
 * instead of this checkout's source.
 */
export function tmuxChat(session: string, options: { joinWrappedLines?: boolean; program?: string[]; extendedKeys?: boolean } = {}): TmuxChat {
  // extended keys (Shift+Enter as a key of its own) is a server option: a tmux server of the chat's own
  const server = options.extendedKeys ? ['-L', session] : [];
  const tmux = (...args: string[]) => execFileSync('tmux', [...server, ...args], { encoding: 'utf8' });
  const screen = (capture: { escapes?: boolean } = {}) => tmux('capture-pane', '-p', ...(capture.escapes ? ['-e'] : []), ...(options.joinWrappedLines ? ['-J'] : []), '-t', session, '-S', '-200');
  const launch = (args: string[], cwd: string, start: StartOptions & { before?: string; after?: string }) => {
    const command = (options.program ? [...options.program, ...args] : chatCommand(args)).map(quote).join(' ');
    const env = Object.entries(start.env ?? {}).map(([name, value]) => `${name}=${quote(value)}`).join(' ');
    const line = `${start.before ?? ''} env -u SERVICE_TOKEN ${env} ${command} ${start.after ?? ''}; echo CHAT-EXITED-$?; sleep 60`;
    tmux('new-session', '-d', '-s', session, '-x', '150', '-y', '50', '-c', cwd, line);
    if (options.extendedKeys) tmux('set-option', '-s', 'extended-keys', 'on');
  };
  const waitForScreen = async (test: RegExp, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = screen();
      if (test.test(text)) return text;
      if (Date.now() > deadline) throw new Error(`screen never matched ${test}:\n${text}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  return {
    async start(url, cwd, start = {}) {
      launch(['--url', url, ...(start.args ?? [])], cwd, start);
      await waitForScreen(/^›/m, 60_000);
    },
    run: (args, cwd, start = {}) => launch(args, cwd, start),
    send: (...keys) => void tmux('send-keys', '-t', session, ...keys),
    paste(text) {
      tmux('set-buffer', '-b', session, text);
      tmux('paste-buffer', '-p', '-d', '-b', session, '-t', session);
    },
    screen,
    waitForScreen,
    resize: (columns, rows) => void tmux('resize-window', '-t', session, '-x', String(columns), '-y', String(rows)),
    kill() {
      try {
        if (options.extendedKeys) tmux('kill-server');
        else tmux('kill-session', '-t', session);
      } catch {
        // already gone
      }
    },
  };
}
