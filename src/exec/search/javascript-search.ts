/**
 * The search backend used when ripgrep is not installed. The model's pattern runs on RE2 (re2js),
 * whose matching time is linear in the input, never on a backtracking engine: `(\w+)+#$` cannot
 * stall the server. The walk skips .git and node_modules, never follows a symlink (each directory
 * and file is opened from its open parent with O_NOFOLLOW), skips binary and very large files,
 * stops at the result bound, yields to the event loop between files and gives up at the deadline.
 */
import { closeSync, constants, fstatSync, readSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { RE2JS } from 're2js';
import { closeDirectory, directoryPath, openChildDirectory, openDirectoryExact, openEntry, openExact, type OpenDirectory } from '../../workspace/no-follow.ts';
import { ExecutorError } from '../executor.ts';
import { clipMatchText, type SearchBackend, type SearchMatch, type SearchRequest } from './backend.ts';
import { compileGlob, type GlobFilter } from './glob.ts';

const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules']);
const MAX_FILE_BYTES = 4 * 1024 * 1024;
const MAX_FILES_VISITED = 50_000;
/** All the bytes one search may read, whatever the time limit says. */
const MAX_BYTES_SEARCHED = 256 * 1024 * 1024;
const BINARY_SNIFF_BYTES = 8192;

interface SearchState {
  matches: SearchMatch[];
  limitReached: boolean;
  filesVisited: number;
  bytesSearched: number;
}

interface Search {
  pattern: RE2JS;
  filter: GlobFilter | null;
  request: SearchRequest;
  searchRoot: string;
  state: SearchState;
}

export const javascriptSearch: SearchBackend = async (request) => {
  const search: Search = {
    pattern: compilePattern(request.pattern),
    filter: request.glob ? compileGlob(request.glob) : null,
    request,
    searchRoot: request.target,
    state: { matches: [], limitReached: false, filesVisited: 0, bytesSearched: 0 },
  };
  let directory: OpenDirectory | null = null;
  try {
    directory = openDirectoryExact(request.target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') throw error;
  }
  if (directory === null) {
    searchFile(openExact(request.target, constants.O_RDONLY | constants.O_NONBLOCK), request.target, search);
  } else {
    try {
      await searchDirectory(directory, search);
    } finally {
      closeDirectory(directory);
    }
  }
  return { matches: search.state.matches, limitReached: search.state.limitReached };
};

/** RE2 syntax, as ripgrep's: `(?i)` and the other inline flags work; lookaround and backreferences do not. */
function compilePattern(pattern: string): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch (error) {
    throw new ExecutorError('operation', `invalid regular expression (RE2 syntax, as ripgrep's; no lookaround or backreferences): ${(error as Error).message}`);
  }
}

async function searchDirectory(directory: OpenDirectory, search: Search): Promise<void> {
  const { request, state } = search;
  request.signal.throwIfAborted();
  const entries = await readdir(directoryPath(directory), { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (state.limitReached || state.filesVisited >= MAX_FILES_VISITED || state.bytesSearched >= MAX_BYTES_SEARCHED) return;
    const full = path.join(directory.path, entry.name);
    if (entry.isDirectory() && !SKIPPED_DIRECTORIES.has(entry.name)) {
      const child = tryOpen(() => openChildDirectory(directory, entry.name));
      if (child === null) continue;
      try {
        await searchDirectory(child, search);
      } finally {
        closeDirectory(child);
      }
    } else if (entry.isFile() && (search.filter === null || search.filter.matches(path.relative(search.searchRoot, full)))) {
      state.filesVisited++;
      const fd = tryOpen(() => openEntry(directory, entry.name, constants.O_RDONLY | constants.O_NONBLOCK));
      if (fd !== null) searchFile(fd, full, search);
      await yieldToEventLoop();
      request.signal.throwIfAborted();
    }
  }
}

/** Searches the open file `fd` (named `file` in matches); closes it. */
function searchFile(fd: number, file: string, search: Search): void {
  const { state, request } = search;
  const text = readSearchableText(fd);
  if (text === null) return;
  state.bytesSearched += text.length;
  const lines = text.split(/\r?\n/);
  for (let index = 0; index < lines.length; index++) {
    if (!search.pattern.matcher(lines[index]).find()) continue;
    if (state.matches.length === request.maxResults) {
      state.limitReached = true;
      return;
    }
    state.matches.push({ file, line: index + 1, text: clipMatchText(lines[index]) });
  }
}

/**
 * The text of the open file `fd`, or null for anything but a regular text file of at most
 * MAX_FILE_BYTES; closes `fd`.
 */
export function readSearchableText(fd: number): string | null {
  try {
    return readText(fd);
  } finally {
    closeSync(fd);
  }
}

function readText(fd: number): string | null {
  const info = fstatSync(fd);
  if (!info.isFile() || info.size > MAX_FILE_BYTES) return null;
  const buffer = Buffer.alloc(info.size);
  let length = 0;
  while (length < buffer.length) {
    const read = readSync(fd, buffer, length, buffer.length - length, length);
    if (read === 0) break;
    length += read;
  }
  const bytes = buffer.subarray(0, length);
  if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return null;
  return bytes.toString('utf8');
}

/** An entry that vanished or turned into a symlink since it was listed is skipped. */
function tryOpen<T>(open: () => T): T | null {
  try {
    return open();
  } catch {
    return null;
  }
}
