/**
 * The host side of ToolExecutor: what the tools do today, behind the one interface. Commands go
 * through a CommandRunner (the process-group runner, or the confined one of host-confinement.ts);
 * file operations use the race-free primitives of workspace/no-follow.ts and the search backends.
 * Paths are host paths that the caller has already checked against the workspace roots
 * (agent/tools/tool-paths.ts); a symlink swapped in afterwards is refused, not followed.
 */
import { closeSync, constants, fstatSync, lstatSync, readSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeContents } from '../agent/tools/apply-patch/patch-files.ts';
import type { CommandRunner } from '../agent/tools/process-group.ts';
import { chooseSearchBackend } from '../agent/tools/search/search-tool.ts';
import { closeDirectory, directoryPath, entryPath, openDirectoryExact, openExact } from '../workspace/no-follow.ts';
import { ExecutorError, type DirectoryEntry, type ToolExecutor } from './executor.ts';

export interface HostExecutorOptions {
  runner: CommandRunner;
}

/** The protocol's bound on a listing, kept on the host too so both executors answer alike. */
const MAX_LIST_ENTRIES = 10_000;

export function hostExecutor(options: HostExecutorOptions): ToolExecutor {
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
        output: result.spawnError ? `${result.output}${result.spawnError}\n` : result.output,
        outputTruncated: result.truncated,
        durationMs: result.durationMs,
      };
    },

    async readFile(path, maxBytes) {
      return operation(path, () => {
        const fd = openExact(path, constants.O_RDONLY | constants.O_NONBLOCK);
        try {
          if (!fstatSync(fd).isFile()) throw new ExecutorError('operation', `${path} is not a regular file`);
          const buffer = Buffer.alloc(maxBytes + 1);
          let length = 0;
          for (let read = -1; read !== 0 && length < buffer.length; length += read) read = readSync(fd, buffer, length, buffer.length - length, null);
          return { content: buffer.subarray(0, Math.min(length, maxBytes)), truncated: length > maxBytes };
        } finally {
          closeSync(fd);
        }
      });
    },

    async writeFile(path, content, writeOptions = {}) {
      // apply_patch's writer (temporary file renamed over the name) takes text: refuse bytes it would change
      const text = content.toString('utf8');
      if (!Buffer.from(text, 'utf8').equals(content)) throw new ExecutorError('operation', `${path}: the host executor writes UTF-8 text only`);
      operation(path, () => {
        if (!writeOptions.createParents) openExact(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY);
        writeContents(path, text, []);
      });
    },

    async listDirectory(path) {
      const directory = operation(path, () => openDirectoryExact(path));
      try {
        const names = (await readdir(directoryPath(directory), { withFileTypes: true })).map((entry) => entry.name).sort();
        const entries = names.slice(0, MAX_LIST_ENTRIES).map((name): DirectoryEntry => {
          const stat = lstatSync(entryPath(directory, name));
          const type = stat.isFile() ? 'file' : stat.isDirectory() ? 'directory' : stat.isSymbolicLink() ? 'symlink' : 'other';
          return { name, type, size: stat.size };
        });
        return { entries, truncated: names.length > MAX_LIST_ENTRIES };
      } finally {
        closeDirectory(directory);
      }
    },

    async search(query) {
      const { backend } = chooseSearchBackend();
      const result = await backend({ pattern: query.pattern, target: query.path, glob: query.glob, maxResults: query.maxMatches, signal: query.signal });
      return { matches: result.matches.map((match) => ({ path: match.file, line: match.line, text: match.text })), truncated: result.limitReached };
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
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ExecutorError('operation', `${path} does not exist`);
    throw new ExecutorError('operation', `${path}: ${(error as Error).message}`);
  }
}
