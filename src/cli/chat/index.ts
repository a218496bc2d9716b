import { readFileSync, realpathSync, statSync } from 'node:fs';
import { relative, resolve, isAbsolute } from 'node:path';
import { UsageError } from '../../config/flags.ts';
import { Chat, type ChatTerminal } from './chat.ts';
import type { OutputStream } from './terminal-screen.ts';
import { connect } from './connect.ts';
import { CHAT_HELP, parseChatOptions } from './options.ts';
import { findSession } from './sessions.ts';
import { preflight } from './preflight.ts';

/** `agentd chat`: returns the exit code. */
export async function runChat(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string, terminal: ChatTerminal & { errors?: OutputStream } = { input: process.stdin, output: process.stdout }): Promise<number> {
  let connection;
  try {
    const options = parseChatOptions(argv);
    if (options.help) {
      terminal.output.write(`${CHAT_HELP}\n`);
      return 0;
    }
    const chatDirectory = directoryOf(options.cwd, cwd);
    const outputSchema = options.outputSchema === null ? null : readOutputSchema(resolve(cwd, options.outputSchema));
    connection = await connect(options, env, cwd, chatDirectory);
    if (connection.workspaceRoots && !connection.workspaceRoots.some((root) => isWithin(chatDirectory, root))) {
      throw new UsageError(`${chatDirectory} is outside the server's workspace roots (${connection.workspaceRoots.join(', ')}): start chat in a directory under one, or pass --cwd DIR`);
    }
    const { client } = connection;
    const provisional = await preflight({ client, url: options.url, tokenGiven: connection.tokenGiven, model: options.model, cwd: chatDirectory, cwdChecked: connection.workspaceRoots !== null, resuming: options.sessionId !== null });
    const session = options.sessionId ? await findSession(client, options.sessionId) : provisional;
    // --json: the events on stdout, everything said to a person on stderr
    const screen: ChatTerminal = options.json ? { input: terminal.input, output: terminal.errors ?? process.stderr, events: terminal.output } : terminal;
    const rich = Boolean(screen.output.isTTY) && !env.NO_COLOR && !options.json;
    const chat = new Chat(client, { session, cwd: chatDirectory, model: options.model, describe: connection.describe, rich, outputSchema, autoAnswer: options.autoAnswer }, screen);
    const onSignal = () => chat.interrupt();
    process.on('SIGINT', onSignal);
    // an input that ends at once ends the chat while it is still starting
    await Promise.race([chat.start(), chat.done]);
    const code = await chat.done;
    process.off('SIGINT', onSignal);
    // the session made at start to check the directory, when no turn went to it, is not left behind
    if (provisional && !chat.sessionsWithTurns.has(provisional.id)) await client.deleteSession({ path: { id: provisional.id } }).catch(() => undefined);
    return code;
  } catch (error) {
    process.stderr.write(`agentd chat: ${(error as Error).message}\n`);
    return error instanceof UsageError ? 2 : 1;
  } finally {
    await connection?.close();
  }
}

/** --output-schema FILE: its JSON (the server checks it is a schema it can use, at the first turn). */
function readOutputSchema(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new UsageError(`--output-schema: cannot read ${file}`);
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`--output-schema: ${file} is not JSON (${(error as Error).message})`);
  }
}

/** --cwd (relative to where chat started), or that directory itself, with symlinks resolved. */
function directoryOf(option: string | null, cwd: string): string {
  const wanted = resolve(cwd, option ?? '.');
  let directory: string;
  try {
    directory = realpathSync(wanted);
  } catch {
    throw new UsageError(`--cwd: no such directory: ${wanted}`);
  }
  if (!statSync(directory).isDirectory()) throw new UsageError(`--cwd: not a directory: ${wanted}`);
  return directory;
}

function isWithin(path: string, root: string): boolean {
  let canonicalRoot: string;
  try {
    canonicalRoot = realpathSync(root);
  } catch {
    return false;
  }
  const rest = relative(canonicalRoot, path);
  return rest === '' || (rest !== '..' && !rest.startsWith('../') && !isAbsolute(rest));
}
