/**
 * The runner's request loop: reads bounded NDJSON requests from stdin, runs each in the sandbox
 * (several at once, by id), streams a run's output and ends every request with one result line.
 */
import { existsSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { Value } from 'typebox/value';
import { BoundedLineSplitter } from '../ndjson.ts';
import {
  DEFAULT_TIMEOUT_MS, GUEST_WORKSPACE, MAX_LINE_BYTES, MAX_OUTPUT_BYTES, MAX_OUTPUT_CHUNK_CHARS,
  SandboxRequestSchema, type OperationRequest, type RunRequest, type SandboxRequest, type SandboxResponse,
} from '../protocol.ts';
import { planOperation, type PlannedOperation } from './operations.ts';
import { startSandboxedProcess, type RunningProcess, type SandboxContext } from './sandboxed-process.ts';

export class RunnerSession {
  private readonly running = new Map<string, RunningProcess>();
  private readonly splitter: BoundedLineSplitter;

  constructor(
    private readonly context: SandboxContext,
    private readonly send: (response: SandboxResponse) => void,
    /** called when the input can no longer be trusted (a line over the bound) */
    private readonly onFatal: () => void,
  ) {
    this.splitter = new BoundedLineSplitter(MAX_LINE_BYTES, (line) => this.receive(line), () => {
      this.send({ type: 'protocol_error', message: `a request line is longer than ${MAX_LINE_BYTES} bytes; the runner stops` });
      this.onFatal();
    });
  }

  push(chunk: Buffer): void {
    this.splitter.push(chunk);
  }

  /** Kills every running command's sandbox (their PID namespaces die with bwrap). */
  cancelAll(): void {
    for (const process of this.running.values()) process.cancel();
  }

  get idle(): Promise<void> {
    return Promise.all([...this.running.values()].map((process) => process.done)).then(() => undefined);
  }

  private receive(line: string): void {
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch {
      this.send({ type: 'protocol_error', message: 'a request line is not JSON' });
      return;
    }
    if (!Value.Check(SandboxRequestSchema, request)) {
      const id = typeof (request as { id?: unknown })?.id === 'string' ? (request as { id: string }).id : undefined;
      const firstError = [...Value.Errors(SandboxRequestSchema, request)][0];
      this.send({ type: 'protocol_error', ...(id ? { id } : {}), message: `invalid request${firstError ? `: ${firstError.instancePath || '/'} ${firstError.message}` : ''}` });
      return;
    }
    this.handle(request as SandboxRequest);
  }

  private handle(request: SandboxRequest): void {
    if (request.type === 'cancel') {
      this.running.get(request.id)?.cancel(); // an id that already finished needs nothing
      return;
    }
    if (this.running.has(request.id)) {
      this.send({ type: 'protocol_error', id: request.id, message: `request id ${request.id} is already running` });
      return;
    }
    this.start(request, request.type === 'run' ? planRun(request) : planOperation(request));
  }

  private start(request: OperationRequest, plan: PlannedOperation): void {
    const { id } = request;
    const collected: Buffer[] = [];
    let stderr = '';
    const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
    const stream = (name: 'stdout' | 'stderr', text: string) => {
      for (let start = 0; start < text.length; start += MAX_OUTPUT_CHUNK_CHARS) {
        this.send({ type: 'output', id, stream: name, data: text.slice(start, start + MAX_OUTPUT_CHUNK_CHARS) });
      }
    };
    const process = startSandboxedProcess(this.context, {
      argv: plan.argv,
      cwd: plan.cwd,
      timeoutMs: plan.timeoutMs,
      stdin: plan.stdin,
      outputLimitBytes: plan.outputLimitBytes,
      onOutput: (name, chunk) => {
        if (plan.streams) stream(name, decoders[name].write(chunk));
        else if (name === 'stdout') collected.push(chunk);
        else if (stderr.length < 4096) stderr += chunk.toString('utf8');
      },
    });
    this.running.set(id, process);
    void process.done.then((outcome) => {
      this.running.delete(id);
      if (plan.streams) for (const name of ['stdout', 'stderr'] as const) stream(name, decoders[name].end());
      this.send({ type: 'result', id, ...plan.finish(outcome, Buffer.concat(collected), stderr) });
    });
  }
}

/** A shell string runs under bash when the host has it (what models write), else POSIX sh. */
const SHELL = existsSync('/bin/bash') ? ['/bin/bash', '-c'] : ['/bin/sh', '-c'];

function planRun(request: RunRequest): PlannedOperation {
  return {
    argv: 'shell' in request ? [...SHELL, request.shell] : request.argv,
    cwd: request.cwd ?? GUEST_WORKSPACE,
    timeoutMs: request.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    stdin: request.stdin === undefined ? undefined : Buffer.from(request.stdin, 'utf8'),
    outputLimitBytes: MAX_OUTPUT_BYTES,
    streams: true,
    finish: (outcome) => ({ ok: true, outcome }),
  };
}
