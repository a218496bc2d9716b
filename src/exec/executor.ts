/**
 * The one way execution tools (shell, apply_patch, file reads and writes, search) reach the
 * machine: a ToolExecutor runs a command with streaming output and cancellation, and reads,
 * writes, lists and searches files. Two implementations: `hostExecutor` (host paths, today's
 * process-group runner and race-free fs operations) and `sandboxExecutor` (guest paths, every
 * operation inside the tenant's sandbox runner, never on the host). Every execution tool reaches
 * it through its ToolContext; the boundary's one comes from boundary-tools.ts.
 */
import type { CommandView } from './process-group.ts';
import type { DirectoryEntry, SearchMatch } from '../sandbox/protocol.ts';

export type { DirectoryEntry };

interface RunCommand {
  argv: string[];
  /** a host path for the host executor, a guest path (default /workspace) for the sandbox */
  cwd: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** stdout and stderr interleaved, in arrival order */
  onOutput(chunk: string): void;
  /** host only: the variables the allowlist of exec/tool-environment.ts may pass on; the sandbox's environment is fixed */
  env?: Record<string, string>;
  /** host only: what a confined host command may see and change; the sandbox always shows its workspace */
  view?: CommandView;
  /** sandbox only: text given to the command's standard input */
  stdin?: string;
}

export interface RunOutcome {
  /** null when a signal ended the command or it never started */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  /** the sandbox's memory limit killed a process while it ran (always false on the host) */
  oomKilled: boolean;
  /** head and tail of the interleaved output */
  output: string;
  outputTruncated: boolean;
  durationMs: number;
  /** host only: why the command could not start (e.g. no such program) */
  startError?: string;
  /** host only: background processes were still running when the command ended, and were stopped */
  strayProcessesStopped?: boolean;
}

interface FileContent {
  content: Buffer;
  /** the file is longer than the bytes returned */
  truncated: boolean;
}

interface DirectoryListing {
  /** in name order */
  entries: DirectoryEntry[];
  truncated: boolean;
}

interface SearchQuery {
  /** a ripgrep regex */
  pattern: string;
  path: string;
  glob?: string;
  maxMatches: number;
  signal: AbortSignal;
}

interface SearchResults {
  matches: SearchMatch[];
  truncated: boolean;
}

export interface ToolExecutor {
  /** 'sandbox': every path is a guest path and nothing runs on the host */
  readonly kind: 'host' | 'sandbox';
  run(command: RunCommand): Promise<RunOutcome>;
  readFile(path: string, maxBytes: number): Promise<FileContent>;
  /** replaces the file whole; missing parents are created when asked */
  writeFile(path: string, content: Buffer, options?: { createParents?: boolean }): Promise<void>;
  /** removes a file; one already gone is fine */
  removeFile(path: string): Promise<void>;
  listDirectory(path: string): Promise<DirectoryListing>;
  search(query: SearchQuery): Promise<SearchResults>;
  /** ends whatever the executor holds (the sandbox runner); later calls fail */
  close(): Promise<void>;
}

/** Why a file operation failed, when the tools word it their own way. */
export type FileProblem = 'not_found' | 'is_directory' | 'not_a_directory' | 'not_a_file';

/**
 * A failed operation, in words meant for the model's tool output. `sandbox`: the sandbox itself
 * failed (missing, crashed, hung, garbage) and nothing ran; `operation`: the file operation failed,
 * `problem` saying how when it is one the tools recognise.
 */
export class ExecutorError extends Error {
  constructor(
    readonly reason: 'sandbox' | 'operation',
    message: string,
    readonly problem?: FileProblem,
  ) {
    super(message);
    this.name = 'ExecutorError';
  }
}
