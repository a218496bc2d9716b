/**
 * The file operations (read, write, list, search) as ordinary commands run inside the sandbox
 * (coreutils, findutils, ripgrep), so a path is resolved in the guest's mount namespace exactly as
 * a shell command would see it: a symlink can point nowhere the guest cannot already see.
 */
import { GUEST_WORKSPACE, MAX_READ_BYTES, type DirectoryEntry, type OperationRequest, type ProcessOutcome, type ResultLine, type SearchMatch } from '../protocol.ts';

/** How long a file operation may take before it is treated like a hung command. */
const FILE_OPERATION_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_MATCHES = 1000;
const MAX_LIST_ENTRIES = 10_000;
/** What a listing or a search may print before it is cut; the result line stays under MAX_LINE_BYTES. */
const COLLECTED_OUTPUT_BYTES = 2 * 1024 * 1024;
/** A matching line longer than this is cut (minified files). */
const MAX_MATCH_TEXT_CHARS = 1000;

export interface PlannedOperation {
  argv: string[];
  cwd: string;
  timeoutMs: number;
  stdin?: Buffer;
  outputLimitBytes: number;
  /** stream output to the caller (a run) or collect it for `finish` (a file operation) */
  streams: boolean;
  finish(outcome: ProcessOutcome, stdout: Buffer, stderr: string): Omit<ResultLine, 'type' | 'id'>;
}

function failed(outcome: ProcessOutcome, stderr: string): Omit<ResultLine, 'type' | 'id'> {
  const reason = outcome.timedOut ? 'timed out' : outcome.cancelled ? 'cancelled' : stderr.trim().split('\n').slice(-3).join(' ') || `exit code ${outcome.exitCode}`;
  return { ok: false, error: { code: 'operation_failed', message: reason }, outcome };
}

export function planOperation(request: Exclude<OperationRequest, { type: 'run' }>): PlannedOperation {
  const base = { cwd: GUEST_WORKSPACE, timeoutMs: FILE_OPERATION_TIMEOUT_MS, streams: false, outputLimitBytes: COLLECTED_OUTPUT_BYTES };
  switch (request.type) {
    case 'read': {
      const maxBytes = request.maxBytes ?? MAX_READ_BYTES;
      return {
        ...base,
        argv: ['head', '-c', String(maxBytes + 1), '--', request.path],
        outputLimitBytes: maxBytes + 1,
        finish: (outcome, stdout, stderr) =>
          outcome.exitCode !== 0 ? failed(outcome, stderr) : { ok: true, contentBase64: stdout.subarray(0, maxBytes).toString('base64'), truncated: stdout.length > maxBytes },
      };
    }
    case 'write': {
      const script = request.createParents ? 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"' : 'cat > "$1"';
      return {
        ...base,
        argv: ['/bin/sh', '-c', script, 'sh', request.path],
        stdin: Buffer.from(request.contentBase64, 'base64'),
        finish: (outcome, _stdout, stderr) => (outcome.exitCode !== 0 ? failed(outcome, stderr) : { ok: true }),
      };
    }
    case 'list':
      return {
        ...base,
        // four NUL-terminated fields per entry: names and link targets may hold any other byte
        argv: ['find', request.path, '-mindepth', '1', '-maxdepth', '1', '-printf', '%y\\0%s\\0%l\\0%f\\0'],
        finish: (outcome, stdout, stderr) => (outcome.exitCode !== 0 ? failed(outcome, stderr) : listing(stdout)),
      };
    case 'search': {
      const maxMatches = request.maxMatches ?? DEFAULT_MAX_MATCHES;
      return {
        ...base,
        argv: ['rg', '--json', '--no-config', ...(request.glob ? ['--glob', request.glob] : []), '-e', request.pattern, '--', request.path],
        // rg exits 1 when nothing matched: an empty answer, not a failure
        finish: (outcome, stdout, stderr) => (outcome.exitCode !== 0 && outcome.exitCode !== 1 ? failed(outcome, stderr) : searchMatches(stdout, maxMatches, outcome.outputTruncated)),
      };
    }
  }
}

const ENTRY_TYPES: Record<string, DirectoryEntry['type']> = { f: 'file', d: 'directory', l: 'symlink' };

function listing(stdout: Buffer): Omit<ResultLine, 'type' | 'id'> {
  const fields = stdout.toString('utf8').split('\0');
  const entries: DirectoryEntry[] = [];
  for (let index = 0; index + 3 < fields.length; index += 4) {
    const [type, size, target, name] = fields.slice(index, index + 4);
    const entryType = ENTRY_TYPES[type] ?? 'other';
    entries.push({ name, type: entryType, size: Number(size), ...(entryType === 'symlink' ? { target } : {}) });
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { ok: true, entries: entries.slice(0, MAX_LIST_ENTRIES), truncated: entries.length > MAX_LIST_ENTRIES };
}

function searchMatches(stdout: Buffer, maxMatches: number, outputTruncated: boolean): Omit<ResultLine, 'type' | 'id'> {
  const matches: SearchMatch[] = [];
  let more = outputTruncated;
  for (const line of stdout.toString('utf8').split('\n')) {
    if (!line.startsWith('{"type":"match"')) continue;
    if (matches.length === maxMatches) {
      more = true;
      break;
    }
    try {
      const { data } = JSON.parse(line) as { data: { path: { text?: string }; line_number: number; lines: { text?: string } } };
      matches.push({ path: data.path.text ?? '', line: data.line_number, text: (data.lines.text ?? '').replace(/\n$/, '').slice(0, MAX_MATCH_TEXT_CHARS) });
    } catch {
      more = true; // the last line cut by the output bound
    }
  }
  return { ok: true, matches, truncated: more };
}
