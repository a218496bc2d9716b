/**
 * The caller's side of the sandbox runner protocol (docs/SANDBOX.md): starts the runner, waits for
 * `ready` within a deadline, sends requests and routes the bounded response lines back to them.
 * Anything the runner does wrong (garbage, an oversized line, a result nobody asked for, death)
 * fails every pending call with a SandboxError and drops the process; the next call starts a new
 * one. It never runs anything itself: no runner, no execution.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { BoundedLineSplitter } from '../sandbox/ndjson.ts';
import { encodeLine, MAX_LINE_BYTES, type OperationRequest, type ReadyLine, type ResultLine } from '../sandbox/protocol.ts';

export type SandboxErrorCode = 'sandbox_unavailable' | 'sandbox_protocol_error' | 'sandbox_died' | 'sandbox_start_timeout' | 'sandbox_request_rejected' | 'sandbox_closed' | 'sandbox_cancel_timeout';

/** How long a cancelled call may take to report its end before the runner, and all it runs, is killed (the runner kills the command's cgroup at once; this is for a runner that stopped answering). */
export const CANCEL_GRACE_MS = 5_000;

export class SandboxError extends Error {
  constructor(
    readonly code: SandboxErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'SandboxError';
  }
}

/** What a runner inherits from agentd: PATH and the runner's own AGENTD_SANDBOX_* settings, never a credential. */
export function runnerEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => name === 'PATH' || name.startsWith('AGENTD_SANDBOX_')));
}

export interface SandboxClientOptions {
  /** the runner's argv, e.g. [`bin/agentd-sandbox`, `--workspace`, dir] */
  command: string[];
  env?: NodeJS.ProcessEnv;
  readyTimeoutMs?: number;
}

export type RequestBody = OperationRequest extends infer R ? (R extends OperationRequest ? Omit<R, 'id'> : never) : never;

export interface CallOptions {
  onOutput?(stream: 'stdout' | 'stderr', data: string): void;
  signal?: AbortSignal;
}

interface PendingCall {
  resolve(result: ResultLine): void;
  reject(error: SandboxError): void;
  onOutput?: CallOptions['onOutput'];
}

/** What a runner may say on stderr is kept for the error message, bounded. */
const STDERR_TAIL_CHARS = 2000;
const PIPE_GRACE_MS = 200;

class RunnerProcess {
  readonly pending = new Map<string, PendingCall>();
  readonly ready: Promise<ReadyLine>;
  private failure: SandboxError | null = null;
  private stderrTail = '';
  private settleReady!: { resolve(line: ReadyLine): void; reject(error: SandboxError): void };
  private isReady = false;

  constructor(
    readonly child: ChildProcessWithoutNullStreams,
    readyTimeoutMs: number,
    private readonly onGone: (runner: RunnerProcess) => void,
  ) {
    this.ready = new Promise((resolve, reject) => (this.settleReady = { resolve, reject }));
    this.ready.catch(() => {});
    const timer = setTimeout(() => this.fail(new SandboxError('sandbox_start_timeout', `the sandbox runner printed no ready line within ${readyTimeoutMs} ms`)), readyTimeoutMs);
    this.ready.then(() => clearTimeout(timer), () => clearTimeout(timer));
    const splitter = new BoundedLineSplitter(MAX_LINE_BYTES, (line) => this.receive(line), () =>
      this.fail(new SandboxError('sandbox_protocol_error', `the sandbox runner sent a line longer than ${MAX_LINE_BYTES} bytes`)),
    );
    child.stdout.on('data', (chunk: Buffer) => splitter.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => (this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS)));
    child.stdin.on('error', () => {}); // a dead runner's pipe; the exit handler reports it
    child.on('error', (error) => this.fail(new SandboxError('sandbox_unavailable', `cannot start the sandbox runner: ${error.message}`)));
    child.on('exit', (code, signal) => {
      const report = () => {
        const how = signal ? `signal ${signal}` : `exit code ${code}`;
        const detail = this.stderrTail.trim() ? `: ${this.stderrTail.trim().split('\n').slice(-3).join(' ')}` : '';
        this.fail(new SandboxError('sandbox_died', `the sandbox runner ended (${how})${detail}`));
      };
      // Its last lines (results, its stderr) may still be in the pipes: they are read until both
      // close ('close'), or for a short grace when something it left behind holds them open.
      const grace = setTimeout(report, PIPE_GRACE_MS);
      child.once('close', () => (clearTimeout(grace), report()));
    });
  }

  /** Whether the process has ended, though its failure may not be reported yet (it waits for the pipes). */
  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  send(message: object): void {
    this.child.stdin.write(encodeLine(message));
  }

  /** Fails everything pending and kills the process; only the first failure counts. */
  fail(error: SandboxError): void {
    if (this.failure) return;
    this.failure = error;
    this.settleReady.reject(error);
    for (const call of this.pending.values()) call.reject(error);
    this.pending.clear();
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    this.onGone(this);
  }

  private receive(line: string): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line);
      if (typeof message !== 'object' || message === null || Array.isArray(message)) throw new Error('not an object');
    } catch {
      this.fail(new SandboxError('sandbox_protocol_error', 'the sandbox runner sent a line that is not a JSON object'));
      return;
    }
    if (!this.isReady) {
      if (message.type === 'ready' && message.protocol === 1) {
        this.isReady = true;
        this.settleReady.resolve(message as unknown as ReadyLine);
      } else if (message.type === 'unavailable') {
        this.fail(new SandboxError('sandbox_unavailable', `the sandbox cannot start: ${String(message.missing)}: ${String(message.message)}`));
      } else {
        this.fail(new SandboxError('sandbox_protocol_error', 'the sandbox runner did not begin with a ready line'));
      }
      return;
    }
    const call = typeof message.id === 'string' ? this.pending.get(message.id) : undefined;
    if (message.type === 'protocol_error' && call) {
      this.pending.delete(message.id as string);
      call.reject(new SandboxError('sandbox_request_rejected', `the sandbox runner refused the request: ${String(message.message)}`));
    } else if (message.type === 'output' && call && (message.stream === 'stdout' || message.stream === 'stderr') && typeof message.data === 'string') {
      call.onOutput?.(message.stream, message.data);
    } else if (message.type === 'result' && call && typeof message.ok === 'boolean') {
      this.pending.delete(message.id as string);
      call.resolve(message as unknown as ResultLine);
    } else if (message.type === 'protocol_error') {
      this.fail(new SandboxError('sandbox_protocol_error', `the sandbox runner reported a protocol error: ${String(message.message)}`));
    } else {
      this.fail(new SandboxError('sandbox_protocol_error', `the sandbox runner sent an unexpected ${String(message.type)} line`));
    }
  }
}

export class SandboxClient {
  private runner: RunnerProcess | null = null;
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: SandboxClientOptions) {}

  /** The live runner's process id, if one runs (for diagnostics and tests). */
  get runnerPid(): number | undefined {
    return this.runner?.child.pid;
  }

  /** Starts the runner when none is alive and waits for its ready line. */
  async start(): Promise<ReadyLine> {
    if (this.closed) throw new SandboxError('sandbox_closed', 'the sandbox client is closed');
    // A runner that has died but whose pipes are still being read takes no new call: its own calls
    // fail with its death when that is reported, a new one goes to a fresh runner.
    if (this.runner?.exited) this.runner = null;
    if (!this.runner) {
      const [executable, ...args] = this.options.command;
      const child = spawn(executable, args, { stdio: ['pipe', 'pipe', 'pipe'], env: this.options.env ?? { PATH: process.env.PATH } });
      this.runner = new RunnerProcess(child, this.options.readyTimeoutMs ?? 10_000, (gone) => {
        if (this.runner === gone) this.runner = null;
      });
    }
    return this.runner.ready;
  }

  /** Sends one operation and resolves with its result line; output of a run streams to `onOutput`. */
  async call(body: RequestBody, options: CallOptions = {}): Promise<ResultLine> {
    options.signal?.throwIfAborted();
    await this.start();
    // aborted while the runner started: its 'abort' event has passed, and nothing was sent or ran
    options.signal?.throwIfAborted();
    const runner = this.runner!;
    const id = String(this.nextId++);
    return new Promise<ResultLine>((resolve, reject) => {
      // A runner that does not report the cancelled call's end in time is killed with everything it
      // runs, so a cancel or a shutdown never waits on it.
      let overdue: NodeJS.Timeout | undefined;
      const abort = () => {
        runner.send({ type: 'cancel', id });
        overdue = setTimeout(() => runner.fail(new SandboxError('sandbox_cancel_timeout', `the sandbox runner did not end a cancelled call within ${CANCEL_GRACE_MS} ms`)), CANCEL_GRACE_MS);
      };
      options.signal?.addEventListener('abort', abort, { once: true });
      const cleanup = () => {
        clearTimeout(overdue);
        options.signal?.removeEventListener('abort', abort);
      };
      runner.pending.set(id, {
        resolve: (result) => (cleanup(), resolve(result)),
        reject: (error) => (cleanup(), reject(error)),
        onOutput: options.onOutput,
      });
      runner.send({ ...body, id });
    });
  }

  /** Ends the runner: stdin closed (its clean shutdown), SIGKILL when it has not exited in time. */
  async close(graceMs = 5000): Promise<void> {
    this.closed = true;
    const runner = this.runner;
    if (!runner) return;
    const exited = new Promise<void>((resolve) => {
      if (runner.child.exitCode !== null || runner.child.signalCode !== null) resolve();
      else runner.child.once('exit', () => resolve());
    });
    runner.child.stdin.end();
    const timer = setTimeout(() => runner.child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    runner.fail(new SandboxError('sandbox_closed', 'the sandbox client is closed'));
  }
}
