/**
 * The search backend used when ripgrep is not installed: a JavaScript regular expression over the
 * lines of every text file below the target. It skips .git and node_modules, does not follow
 * symlinks, skips binary and very large files, and stops at the result bound.
 */
import { lstat, open, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../types.ts';
import { clipMatchText, type SearchBackend, type SearchMatch, type SearchRequest } from './backend.ts';
import { compileGlob, type GlobFilter } from './glob.ts';

const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules']);
const MAX_FILE_BYTES = 4 * 1024 * 1024;
const MAX_FILES_VISITED = 50_000;

export const javascriptSearch: SearchBackend = async (request) => {
  const regex = compilePattern(request.pattern);
  const filter = request.glob ? compileGlob(request.glob) : null;
  const state = { matches: [] as SearchMatch[], limitReached: false, filesVisited: 0 };
  const info = await lstat(request.target);
  if (info.isDirectory()) await searchDirectory(request.target, request.target, regex, filter, request, state);
  else await searchFile(request.target, regex, request, state);
  return { matches: state.matches, limitReached: state.limitReached };
};

interface SearchState {
  matches: SearchMatch[];
  limitReached: boolean;
  filesVisited: number;
}

/** Accepts ripgrep's leading `(?i)` as the JavaScript `i` flag; otherwise JavaScript syntax. */
function compilePattern(pattern: string): RegExp {
  const caseInsensitive = pattern.startsWith('(?i)');
  const source = caseInsensitive ? pattern.slice(4) : pattern;
  const flags = caseInsensitive ? 'i' : '';
  try {
    return new RegExp(source, `${flags}u`);
  } catch {
    // Unicode mode rejects harmless escapes such as `\-`; retry without it before giving up.
    try {
      return new RegExp(source, flags);
    } catch (error) {
      throw new ToolError(`invalid regular expression: ${(error as Error).message}`);
    }
  }
}

async function searchDirectory(
  directory: string,
  searchRoot: string,
  regex: RegExp,
  filter: GlobFilter | null,
  request: SearchRequest,
  state: SearchState,
): Promise<void> {
  request.signal.throwIfAborted();
  const entries = await readdir(directory, { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (state.limitReached || state.filesVisited >= MAX_FILES_VISITED) return;
    const full = path.join(directory, entry.name);
    if (entry.isDirectory() && !SKIPPED_DIRECTORIES.has(entry.name)) {
      await searchDirectory(full, searchRoot, regex, filter, request, state);
    } else if (entry.isFile() && (filter === null || filter.matches(path.relative(searchRoot, full)))) {
      state.filesVisited++;
      await searchFile(full, regex, request, state);
    }
  }
}

async function searchFile(file: string, regex: RegExp, request: SearchRequest, state: SearchState): Promise<void> {
  if (!(await isSearchableText(file))) return;
  const lines = (await readFile(file, 'utf8').catch(() => '')).split(/\r?\n/);
  for (let index = 0; index < lines.length; index++) {
    if (!regex.test(lines[index])) continue;
    if (state.matches.length === request.maxResults) {
      state.limitReached = true;
      return;
    }
    state.matches.push({ file, line: index + 1, text: clipMatchText(lines[index]) });
  }
}

async function isSearchableText(file: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(file, 'r');
    const { size } = await handle.stat();
    if (size > MAX_FILE_BYTES) return false;
    const head = Buffer.alloc(Math.min(size, 8192));
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    return !head.subarray(0, bytesRead).includes(0);
  } catch {
    return false;
  } finally {
    await handle?.close();
  }
}
