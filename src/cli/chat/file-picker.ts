import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Fzf } from 'fzf';
import { completeMention } from './mentions.ts';

/** The most files the picker reads from a directory (git's list or the walk): a huge tree stays quick. */
const MAX_FILES = 20_000;
/** The walk of a directory that is not a repository goes no deeper, and skips these. */
const MAX_DEPTH = 8;
const SKIPPED = new Set(['node_modules', 'dist', 'build', 'target', 'vendor']);
/** Matches shown above the prompt, best first. */
const SHOWN = 10;

/**
 * The fuzzy half of `@path` completion: `@srcchat` + Tab completes to the best-ranked file under
 * the chat's directory (src/cli/chat/chat.ts), lists the next best above the prompt, and each
 * further Tab moves to the next one. Ranked by fzf's own algorithm (the `fzf` package), which
 * favours matches at path separators and word starts, as a person scanning paths does. The files
 * are git's (tracked and untracked, without the ignored) in a repository, else a bounded walk.
 */
export class FilePicker {
  private files: string[] | null = null;
  private finder: Fzf<string[]> | null = null;
  /** the ranked matches of the last query, and the one the line holds now */
  private cycle: { matches: string[]; index: number } | null = null;

  constructor(
    private readonly cwd: string,
    private readonly show: (lines: string[]) => void,
  ) {}

  /**
   * Readline's completer for a line ending in an `@` word (null for any other line): the next
   * match when Tab was pressed on one, else the directory's entries the word starts (completeMention),
   * else the best fuzzy match.
   */
  completeLine(line: string): [string[], string] | null {
    const word = /(?:^|\s)(@\S*)$/.exec(line)?.[1];
    if (word === undefined) return null;
    const cycle = this.cycle;
    if (cycle && word === `@${cycle.matches[cycle.index]}`) {
      cycle.index = (cycle.index + 1) % cycle.matches.length;
      return [[`@${cycle.matches[cycle.index]}`], word];
    }
    this.cycle = null;
    const listed = completeMention(line, this.cwd);
    return listed && listed[0].length > 0 ? listed : this.complete(word);
  }

  private complete(word: string): [string[], string] {
    const query = word.slice(1);
    const matches = query === '' ? [] : this.find(query);
    this.cycle = matches.length > 0 ? { matches, index: 0 } : null;
    if (matches.length > 1) this.show([`@${query}: ${matches.length === SHOWN ? `the best ${SHOWN}` : matches.length} matches, Tab for the next`, ...matches.map((match, index) => `  ${index + 1}. ${match}`)]);
    return [matches.slice(0, 1).map((match) => `@${match}`), word];
  }

  private find(query: string): string[] {
    // equal scores: the shorter path first (the package's byLengthAsc, whose types do not resolve under nodenext)
    this.finder ??= new Fzf(this.list(), { limit: SHOWN, tiebreakers: [(a: { item: string }, b: { item: string }) => a.item.length - b.item.length] });
    return this.finder.find(query).map((entry: { item: string }) => entry.item);
  }

  private list(): string[] {
    this.files ??= gitFiles(this.cwd) ?? walk(this.cwd);
    return this.files;
  }
}

/** The repository's files under `cwd` (tracked, and untracked ones not ignored); null outside a repository. */
function gitFiles(cwd: string): string[] | null {
  try {
    const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd, encoding: 'utf8', timeout: 5000, maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
    return [...new Set(listed.split('\0').filter((path) => path !== ''))].slice(0, MAX_FILES);
  } catch {
    return null;
  }
}

/** Files under `root`, breadth first, without hidden entries and build output. */
function walk(root: string): string[] {
  const files: string[] = [];
  let level = [''];
  for (let depth = 0; depth < MAX_DEPTH && level.length > 0 && files.length < MAX_FILES; depth++) {
    const next: string[] = [];
    for (const directory of level) {
      let entries;
      try {
        entries = readdirSync(join(root, directory), { withFileTypes: true });
      } catch {
        continue;
      }
      for (const entry of entries) {
        if (entry.name.startsWith('.') || SKIPPED.has(entry.name)) continue;
        const path = directory === '' ? entry.name : `${directory}/${entry.name}`;
        if (entry.isDirectory()) next.push(path);
        else if (entry.isFile() && files.length < MAX_FILES) files.push(path);
      }
    }
    level = next;
  }
  return files;
}
