/**
 * The search backend used when ripgrep is on PATH. It honours .gitignore, skips hidden and binary
 * files and does not follow symlinks (ripgrep's defaults); `--no-config` keeps a stray
 * RIPGREP_CONFIG_PATH from adding options such as `--pre`, which runs programs. ripgrep is killed
 * when the call's signal aborts (the turn is cancelled or the tool's deadline passes).
 *
 * ripgrep opens what it walks by name, so a directory swapped for a symlink mid-walk could lead it
 * out of the root. Its output is therefore only a list of candidate lines: each one is confirmed by
 * reading that line from the file opened race-free (confirm-matches.ts), and the text shown is ours.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { toolEnvironment } from '../tool-environment.ts';
import { ExecutorError } from '../executor.ts';
import { clipMatchText, MAX_MATCH_TEXT, type SearchBackend, type SearchMatch } from './backend.ts';
import { confirmMatches } from './confirm-matches.ts';

/** The first executable called `name` on a PATH-style list, or null. */
export function findOnPath(name: string, pathList: string | undefined): string | null {
  for (const directory of (pathList ?? '').split(path.delimiter)) {
    if (directory === '') continue;
    const candidate = path.join(directory, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

export function createRipgrepSearch(ripgrep: string): SearchBackend {
  return (request) =>
    new Promise((resolve, reject) => {
      const args = ['--no-config', '--line-number', '--no-heading', '--with-filename', '--null', '--color', 'never'];
      args.push('--max-columns', String(MAX_MATCH_TEXT), '--max-columns-preview');
      if (request.glob) args.push('--glob', request.glob);
      args.push('-e', request.pattern, '--', request.target);
      const child = spawn(ripgrep, args, {
        env: toolEnvironment(process.env),
        signal: request.signal,
        killSignal: 'SIGKILL',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const matches: SearchMatch[] = [];
      let limitReached = false;
      let pending = '';
      let stderr = '';
      const decoder = new StringDecoder('utf8');
      const take = (line: string) => {
        const match = parseLine(line);
        if (match === null || limitReached) return;
        if (matches.length === request.maxResults) {
          limitReached = true;
          child.kill('SIGTERM');
          return;
        }
        matches.push(match);
      };
      child.stdout.on('data', (data: Buffer) => {
        const lines = (pending + decoder.write(data)).split('\n');
        pending = lines.pop() ?? '';
        lines.forEach(take);
      });
      child.stderr.on('data', (data: Buffer) => {
        if (stderr.length < 4096) stderr += data.toString('utf8');
      });
      child.on('error', (error) => reject(error));
      child.on('close', (code) => {
        if (pending !== '') take(pending + decoder.end());
        // 1 means "no match"; 2 with matches means some files could not be read.
        if (code === 2 && matches.length === 0) reject(new ExecutorError('operation', `ripgrep failed: ${stderr.trim()}`));
        else resolve({ matches: confirmMatches(matches, request.pattern), limitReached });
      });
    });
}

/** `path NUL line:text`, as printed with --null. */
function parseLine(line: string): SearchMatch | null {
  const separator = line.indexOf('\0');
  if (separator === -1) return null;
  const rest = line.slice(separator + 1);
  const colon = rest.indexOf(':');
  const lineNumber = Number(rest.slice(0, colon));
  if (colon === -1 || !Number.isInteger(lineNumber)) return null;
  return { file: line.slice(0, separator), line: lineNumber, text: clipMatchText(rest.slice(colon + 1).replace(/\r$/, '')) };
}
