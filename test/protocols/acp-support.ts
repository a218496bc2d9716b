import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { client, ndJsonStream, PROTOCOL_VERSION, type ClientConnection, type InitializeResponse, type RequestPermissionRequest, type RequestPermissionResponse, type SessionNotification } from '@agentclientprotocol/sdk';

export const BIN = new URL('../../bin/agentd.js', import.meta.url).pathname;

export interface Editor {
  connection: ClientConnection;
  /** every session/update received, in order */
  updates: SessionNotification[];
  /** every session/request_permission received */
  permissions: RequestPermissionRequest[];
  /** how the next permission requests are answered (an option id; absent: the dialog is cancelled) */
  answers: string[];
  /** standard output, line by line, as the process wrote it */
  stdoutLines: string[];
  stderr(): string;
  initialize(): Promise<InitializeResponse>;
  /** resolves once `predicate` holds for the updates received (checked on each one) */
  until(predicate: (updates: SessionNotification[]) => boolean): Promise<void>;
  kill(): Promise<void>;
  exited: Promise<number | null>;
}

/**
 * `agentd acp ARGS` (the real bin, a child process) driven by the ACP SDK's own client side, as
 * an editor runs it: protocol on its stdin and stdout, permissions answered from `answers`.
 */
export function startEditor(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Editor {
  const child = spawn(process.execPath, [BIN, 'acp', ...args], { cwd, env: { PATH: process.env.PATH, HOME: cwd, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const stdoutLines: string[] = [];
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop()!;
    stdoutLines.push(...lines);
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const updates: SessionNotification[] = [];
  const permissions: RequestPermissionRequest[] = [];
  const answers: string[] = [];
  const watchers = new Set<() => void>();
  const app = client({ name: 'test-editor' })
    .onNotification('session/update', ({ params }) => {
      updates.push(params);
      for (const watcher of watchers) watcher();
    })
    .onRequest('session/request_permission', ({ params }): RequestPermissionResponse => {
      permissions.push(params);
      for (const watcher of watchers) watcher();
      const optionId = answers.shift();
      return { outcome: optionId ? { outcome: 'selected', optionId } : { outcome: 'cancelled' } };
    });
  const stream = ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>);
  const connection = app.connect(stream);
  return {
    connection,
    updates,
    permissions,
    answers,
    stdoutLines,
    stderr: () => stderr,
    initialize: () => connection.agent.request<'initialize'>('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} }),
    until: (predicate) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!predicate(updates)) return;
          watchers.delete(check);
          resolve();
        };
        watchers.add(check);
        check();
      }),
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    exited,
  };
}

/** The text of the agent_message_chunk updates of a session, joined. */
export function answerText(updates: SessionNotification[], sessionId: string): string {
  return updates
    .filter((notification) => notification.sessionId === sessionId && notification.update.sessionUpdate === 'agent_message_chunk')
    .map((notification) => ((notification.update as { content: { type: string; text?: string } }).content.text ?? ''))
    .join('');
}
