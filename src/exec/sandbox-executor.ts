/**
 * The sandbox side of ToolExecutor: every operation is a request to the tenant's runner
 * (sandbox-client.ts), with guest paths. It fails closed: a runner that is missing, crashes, hangs at
 * start or speaks garbage fails the call with an ExecutorError saying nothing ran, and the client
 * starts a fresh runner for the next call. There is no host fallback in this file to reach.
 */
import { HeadTailBuffer } from './output.ts';
import { runnerEnvironment, SandboxClient, SandboxError, type CallOptions, type RequestBody } from './sandbox-client.ts';
import { ExecutorError, type FileProblem, type ToolExecutor } from './executor.ts';
import { GUEST_WORKSPACE, MAX_READ_BYTES, type ResultLine } from '../sandbox/protocol.ts';

export interface SandboxExecutorOptions {
  /** the runner program (--sandbox-runner) */
  runner: string;
  /** host directory shown at /workspace */
  workspace: string;
  /** host directory shown at the guest HOME; a fresh one per command without it */
  home?: string;
  readyTimeoutMs?: number;
}

export function sandboxExecutor(options: SandboxExecutorOptions): ToolExecutor {
  const command = [options.runner, '--workspace', options.workspace, ...(options.home ? ['--home', options.home] : [])];
  const client = new SandboxClient({ command, env: runnerEnvironment(), readyTimeoutMs: options.readyTimeoutMs });
  // The runner's own words may name host paths (its stderr, a failed start); the model sees guest ones.
  const hostPaths = [options.workspace, options.home, options.runner].filter((path): path is string => Boolean(path));
  const guestWords = (text: string) => hostPaths.reduce((words, path) => words.replaceAll(path, path === options.workspace ? GUEST_WORKSPACE : 'the sandbox runner'), text);

  /** One request; a sandbox failure becomes ExecutorError('sandbox'), a failed operation ExecutorError('operation'). */
  async function call(body: RequestBody, callOptions: CallOptions = {}): Promise<ResultLine> {
    let result: ResultLine;
    try {
      result = await client.call(body, callOptions);
    } catch (error) {
      if (error instanceof SandboxError) throw new ExecutorError('sandbox', guestWords(`the sandbox failed, nothing ran on the host: ${error.message}`));
      throw error;
    }
    if (!result.ok) {
      const message = guestWords(result.error?.message ?? 'the operation failed');
      throw new ExecutorError('operation', `${'path' in body ? `${body.path}: ` : ''}${message}`, problemOf(message));
    }
    return result;
  }

  return {
    kind: 'sandbox',

    async run(request) {
      const output = new HeadTailBuffer();
      const { outcome } = await call(
        { type: 'run', argv: request.argv, cwd: request.cwd || GUEST_WORKSPACE, timeoutMs: request.timeoutMs, ...(request.stdin === undefined ? {} : { stdin: request.stdin }) },
        {
          signal: request.signal,
          onOutput: (_stream, data) => {
            output.append(data);
            request.onOutput(data);
          },
        },
      );
      if (!outcome) throw new ExecutorError('sandbox', 'the sandbox runner answered a run without its outcome');
      return { ...outcome, output: output.toString(), outputTruncated: outcome.outputTruncated || output.truncated };
    },

    async readFile(path, maxBytes) {
      const result = await call({ type: 'read', path, maxBytes: Math.min(maxBytes, MAX_READ_BYTES) });
      return { content: Buffer.from(result.contentBase64 ?? '', 'base64'), truncated: result.truncated === true };
    },

    async writeFile(path, content, writeOptions = {}) {
      await call({ type: 'write', path, contentBase64: content.toString('base64'), createParents: writeOptions.createParents === true });
    },

    async removeFile(path) {
      const outcome = await this.run({ argv: ['rm', '-f', '--', path], cwd: GUEST_WORKSPACE, timeoutMs: 60_000, signal: new AbortController().signal, onOutput: () => {} });
      if (outcome.exitCode !== 0) throw new ExecutorError('operation', `${path}: ${outcome.output.trim() || `rm ended with exit code ${outcome.exitCode}`}`, problemOf(outcome.output));
    },

    async listDirectory(path) {
      const result = await call({ type: 'list', path });
      return { entries: result.entries ?? [], truncated: result.truncated === true };
    },

    async search(query) {
      const result = await call({ type: 'search', pattern: query.pattern, path: query.path, glob: query.glob, maxMatches: query.maxMatches }, { signal: query.signal });
      return { matches: result.matches ?? [], truncated: result.truncated === true };
    },

    close: () => client.close(),
  };
}

/** The coreutils and findutils messages the runner passes on, as the problems tools recognise. */
function problemOf(message: string): FileProblem | undefined {
  if (/No such file or directory/.test(message)) return 'not_found';
  if (/Is a directory/.test(message)) return 'is_directory';
  if (/Not a directory/.test(message)) return 'not_a_directory';
  return undefined;
}
