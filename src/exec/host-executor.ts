/**
 * The host side of ToolExecutor: what the tools do today, behind the one interface. Commands go
 * through a CommandRunner (the process-group runner, or the confined one of host-confinement.ts);
 * file operations use the race-free primitives of workspace/no-follow.ts and the search backends.
 * Paths are host paths that the caller has already checked against the workspace roots
 * (agent/tools/tool-paths.ts); a symlink swapped in afterwards is refused, not followed.
 */
import { closeSync, constants, fstatSync, lstatSync, readlinkSync, readSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { removeFile, writeContents } from './patch-files.ts';
import type { CommandRunner } from './process-group.ts';
import type { SearchBackend } from './search/backend.ts';
import { chooseSearchBackend } from './search/choose-backend.ts';
import { PathError } from '../workspace/paths.ts';
import { closeDirectory, directoryPath, entryPath, openDirectoryExact, openExact } from '../workspace/no-follow.ts';
import { ExecutorError, type DirectoryEntry, type FileProblem, type ToolExecutor } from './executor.ts';
import { serverFilesGuard } from './server-files-guard.ts';

export interface HostExecutorOptions {
  runner: CommandRunner;
  /** the server's own files and directories: refused to every file operation, left out of listings and searches */
  serverFiles?: readonly string[];
  /** ripgrep or the JavaScript fallback; chosen from PATH on first search when not given */
  searchBackend?: SearchBackend;
}

/** The protocol's bound on a listing, kept on the host too so both executors answer alike. */
const MAX_LIST_ENTRIES = 10_000;
const READ_CHUNK_BYTES = 1024 * 1024;

export function hostExecutor(options: HostExecutorOptions): ToolExecutor {
  let searchBackend = options.searchBackend;
  const serverFiles = serverFilesGuard(options.serverFiles ?? []);
  return {
    kind: 'host',

    async run(command) {
      const result = await options.runner({
        argv: command.argv,
        cwd: command.cwd,
        env: command.env ?? {},
        view: command.view,
        timeoutMs: command.timeoutMs,
        signal: command.signal,
        onOutput: command.onOutput,
      });
      return {
        exitCode: result.exitCode,
        signal: result.signal,
        timedOut: result.timedOut,
        cancelled: result.aborted,
        oomKilled: false,
        output: result.output,
        outputTruncated: result.truncated,
        durationMs: result.durationMs,
        ...(result.spawnError ? { startError: result.spawnError } : {}),
        strayProcessesStopped: result.strayProcessesStopped,
      };
    },

    async readFile(path, maxBytes) {
      serverFiles.refuse(path);
      return operation(path, () => {
        const fd = openExact(path, constants.O_RDONLY | constants.O_NONBLOCK);
        try {
          const info = fstatSync(fd);
          if (info.isDirectory()) throw new ExecutorError('operation', `${path} is a directory`, 'is_directory');
          if (!info.isFile()) throw new ExecutorError('operation', `${path} is not a regular file`, 'not_a_file');
          // Read in chunks up to one byte past the bound: a large bound costs nothing for a small file.
          const chunks: Buffer[] = [];
          let length = 0;
          while (length <= maxBytes) {
            const chunk = Buffer.alloc(Math.min(READ_CHUNK_BYTES, maxBytes + 1 - length));
            const read = readSync(fd, chunk, 0, chunk.length, null);
            if (read === 0) break;
            chunks.push(chunk.subarray(0, read));
            length += read;
          }
          const content = Buffer.concat(chunks, length);
          return { content: content.subarray(0, Math.min(length, maxBytes)), truncated: length > maxBytes };
        } finally {
          closeSync(fd);
        }
      });
    },

    async writeFile(path, content, writeOptions = {}) {
      // apply_patch's writer (temporary file renamed over the name) takes text: refuse bytes it would change
      const text = content.toString('utf8');
      if (!Buffer.from(text, 'utf8').equals(content)) throw new ExecutorError('operation', `${path}: the host executor writes UTF-8 text only`);
      serverFiles.refuse(path);
      operation(path, () => {
        if (!writeOptions.createParents) openExact(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY);
        writeContents(path, text, []);
      });
    },

    async removeFile(path) {
      serverFiles.refuse(path);
      operation(path, () => removeFile(path));
    },

    async listDirectory(path) {
      serverFiles.refuse(path);
      const directory = operation(path, () => openDirectoryExact(path));
      try {
        const names = (await readdir(directoryPath(directory), { withFileTypes: true }))
          .map((entry) => entry.name)
          .filter((name) => !serverFiles.covers(join(path, name)))
          .sort();
        const entries = names.slice(0, MAX_LIST_ENTRIES).map((name): DirectoryEntry => {
          const stat = lstatSync(entryPath(directory, name));
          const type = stat.isFile() ? 'file' : stat.isDirectory() ? 'directory' : stat.isSymbolicLink() ? 'symlink' : 'other';
          return type === 'symlink' ? { name, type, size: stat.size, target: readlinkSync(entryPath(directory, name)) } : { name, type, size: stat.size };
        });
        return { entries, truncated: names.length > MAX_LIST_ENTRIES };
      } finally {
        closeDirectory(directory);
      }
    },

    async search(query) {
      serverFiles.refuse(query.path);
      searchBackend ??= chooseSearchBackend().backend;
      let result;
      try {
        result = await searchBackend({ pattern: query.pattern, target: query.path, glob: query.glob, maxResults: query.maxMatches, signal: query.signal });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ExecutorError('operation', `${query.path} does not exist`, 'not_found');
        if (error instanceof PathError) throw new ExecutorError('operation', error.message);
        throw error;
      }
      const matches = result.matches.filter((match) => !serverFiles.covers(resolve(query.path, match.file)));
      return { matches: matches.map((match) => ({ path: match.file, line: match.line, text: match.text })), truncated: result.limitReached };
    },

    async close() {},
  };
}

/** Runs a file operation, turning the file system's refusals into ExecutorErrors. */
function operation<T>(path: string, action: () => T): T {
  try {
    return action();
  } catch (error) {
    if (error instanceof ExecutorError) throw error;
    const problem = ERRNO_PROBLEMS[(error as NodeJS.ErrnoException).code ?? ''];
    if (problem === 'not_found') throw new ExecutorError('operation', `${path} does not exist`, problem);
    throw new ExecutorError('operation', `${path}: ${(error as Error).message}`, problem);
  }
}

const ERRNO_PROBLEMS: Record<string, FileProblem | undefined> = { ENOENT: 'not_found', ENOTDIR: 'not_a_directory', EISDIR: 'is_directory' };
