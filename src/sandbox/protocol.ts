/**
 * The sandbox runner protocol (docs/SANDBOX.md): newline-delimited JSON over the runner's stdin
 * (requests) and stdout (responses). Both sides import these types and bounds; the runner checks
 * every request against the schemas below, the client checks every response line's size and shape.
 */
import { Type, type Static } from 'typebox';

export const PROTOCOL_VERSION = 1;

import { MAX_READ_BYTES, MAX_TIMEOUT_MS } from './protocol-bounds.ts';

export { DEFAULT_TIMEOUT_MS, MAX_LINE_BYTES, MAX_OUTPUT_BYTES, MAX_OUTPUT_CHUNK_CHARS, MAX_READ_BYTES } from './protocol-bounds.ts';
export { GUEST_HOME, GUEST_WORKSPACE } from './guest-mounts.ts';

const Id = Type.String({ minLength: 1, maxLength: 128 });
const GuestPath = Type.String({ minLength: 1, maxLength: 4096, pattern: '^/' });
const Timeout = Type.Integer({ minimum: 1, maximum: MAX_TIMEOUT_MS });

const RunArgv = Type.Object(
  {
    type: Type.Literal('run'),
    id: Id,
    argv: Type.Array(Type.String({ maxLength: 131072 }), { minItems: 1, maxItems: 4096 }),
    cwd: Type.Optional(GuestPath),
    timeoutMs: Type.Optional(Timeout),
    stdin: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
const RunShell = Type.Object(
  {
    type: Type.Literal('run'),
    id: Id,
    shell: Type.String({ minLength: 1, maxLength: 1048576 }),
    cwd: Type.Optional(GuestPath),
    timeoutMs: Type.Optional(Timeout),
    stdin: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
const Read = Type.Object(
  { type: Type.Literal('read'), id: Id, path: GuestPath, maxBytes: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_READ_BYTES })) },
  { additionalProperties: false },
);
const Write = Type.Object(
  {
    type: Type.Literal('write'),
    id: Id,
    path: GuestPath,
    /** base64, so that any bytes survive JSON */
    contentBase64: Type.String(),
    createParents: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const List = Type.Object({ type: Type.Literal('list'), id: Id, path: GuestPath }, { additionalProperties: false });
const Search = Type.Object(
  {
    type: Type.Literal('search'),
    id: Id,
    pattern: Type.String({ minLength: 1, maxLength: 4096 }),
    path: GuestPath,
    glob: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    maxMatches: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
  },
  { additionalProperties: false },
);
const Cancel = Type.Object({ type: Type.Literal('cancel'), id: Id }, { additionalProperties: false });

export const SandboxRequestSchema = Type.Union([RunArgv, RunShell, Read, Write, List, Search, Cancel]);
export type SandboxRequest = Static<typeof SandboxRequestSchema>;
export type RunRequest = Static<typeof RunArgv> | Static<typeof RunShell>;
type SearchRequest = Static<typeof Search>;
export type OperationRequest = Exclude<SandboxRequest, { type: 'cancel' }>;

/** The first line a healthy runner prints, after its feature check. */
export interface ReadyLine {
  type: 'ready';
  protocol: number;
  workspace: string;
  limits: { cpus: number; memoryBytes: number; processes: number };
  cgroupVersion: 1 | 2;
  /** what confines each command: bubblewrap, or gVisor's runsc (docs/SANDBOX.md, "Runtimes"); absent from an older runner */
  runtime?: 'bubblewrap' | 'gvisor';
}

/** Printed instead of `ready` (then the runner exits 1) when the host cannot give a guarantee. */
interface UnavailableLine {
  type: 'unavailable';
  /** which guarantee is missing: bwrap, user_namespaces, network_namespaces, nftables, slirp4netns, cgroup:<controller>, workspace … */
  missing: string;
  message: string;
}

interface OutputLine {
  type: 'output';
  id: string;
  stream: 'stdout' | 'stderr';
  data: string;
}

export interface ProcessOutcome {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  /** the tenant's memory limit killed a process while this command ran */
  oomKilled: boolean;
  /** output past MAX_OUTPUT_BYTES was dropped */
  outputTruncated: boolean;
  durationMs: number;
}

export interface DirectoryEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  /** a symlink's target, as stored (never followed) */
  target?: string;
}

export interface SearchMatch {
  path: string;
  line: number;
  text: string;
}

/** The last line for a request. `ok` false with `error` when the operation itself failed. */
export type ResultLine = {
  type: 'result';
  id: string;
  ok: boolean;
  error?: { code: string; message: string };
  outcome?: ProcessOutcome;
  contentBase64?: string;
  truncated?: boolean;
  entries?: DirectoryEntry[];
  matches?: SearchMatch[];
};

/** A request the runner could not accept (bad JSON, unknown shape, duplicate id, too long). */
interface ProtocolErrorLine {
  type: 'protocol_error';
  id?: string;
  message: string;
}

export type SandboxResponse = ReadyLine | UnavailableLine | OutputLine | ResultLine | ProtocolErrorLine;

export function encodeLine(message: object): string {
  return `${JSON.stringify(message)}\n`;
}
