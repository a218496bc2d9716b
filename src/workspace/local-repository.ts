/**
 * Whether a local repository may be cloned on the host (a boundary without a sandbox): the
 * repository, its git directory and everything git would read through it must lie inside the
 * allowed roots. git reaches beyond a repository through symlinks (objects/, refs/, packed-refs,
 * any entry of the git directory) and through indirection files (a `.git` file's `gitdir:`,
 * `commondir` of a worktree, `objects/info/alternates`, nested alternates); each one is followed
 * here and judged by canonical location.
 *
 * The walk is asynchronous and bounded: directories are read through the thread pool, the event
 * loop is given back every SLICE_MS, and a repository that needs more than
 * MAX_ENTRIES_INSPECTED entries or INSPECTION_TIME_MS is refused, so one tenant's tree of links
 * cannot hold every other request. In a sandbox nothing of this runs on the host: git itself, in
 * the tenant's view, can reach only what the tenant already sees (checkout.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { canonicalizeInside, isDirectory } from './paths.ts';

/** git itself gives up after 5 levels of alternates. */
const MAX_ALTERNATE_DEPTH = 5;
/** Entries of git directories inspected at most. */
const MAX_ENTRIES_INSPECTED = 200_000;
/** How long one inspection may take, however the file system answers. */
export const INSPECTION_TIME_MS = 10_000;
/** How long the walk may hold the event loop before it gives it back. */
const SLICE_MS = 10;

export class LocalRepositoryRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LocalRepositoryRefused';
  }
}

const refuse = (message: string): never => {
  throw new LocalRepositoryRefused(message);
};

/** What the inspection found: the repository's canonical path and every git directory it judged. */
export interface InspectedRepository {
  path: string;
  /** canonical; git must find its git directory among these */
  gitDirectories: ReadonlySet<string>;
}

/** How much of the inspection is left. */
interface Budget {
  entries: number;
  deadline: number;
  sliceStarted: number;
}

/**
 * The canonical path of the local repository `requested` (relative to the first root), after
 * checking it and everything its git directory leads to; rejects with LocalRepositoryRefused otherwise.
 */
export async function inspectLocalRepository(requested: string, roots: readonly string[]): Promise<InspectedRepository> {
  const located = canonicalizeInside(roots, requested, roots[0]);
  if (located.location === 'outside') refuse('the local repository is outside every allowed workspace root');
  if (!located.exists) refuse('the local repository does not exist');
  const inside = (candidate: string) => canonicalizeInside(roots, candidate, roots[0]);
  const pending = gitDirectoriesOf(located.resolved);
  const inspected = new Set<string>();
  const gitDirectories = new Set<string>();
  const budget: Budget = { entries: 0, deadline: Date.now() + INSPECTION_TIME_MS, sliceStarted: performance.now() };
  while (pending.length > 0) {
    const { directory, objects, depth } = pending.shift()!;
    const canonical = inside(directory);
    if (canonical.location === 'outside') refuse('the local repository uses a git directory outside every allowed workspace root');
    if (depth === 0) gitDirectories.add(canonical.resolved);
    if (inspected.has(canonical.resolved) || !isDirectory(canonical.resolved)) continue;
    inspected.add(canonical.resolved);
    await checkSymlinks(canonical.resolved, roots, inspected, budget);
    for (const alternate of alternatesOf(objects)) {
      if (depth >= MAX_ALTERNATE_DEPTH) refuse('the local repository nests object alternates too deeply');
      pending.push({ directory: alternate, objects: alternate, depth: depth + 1 });
    }
  }
  return { path: located.resolved, gitDirectories };
}

/** A directory to inspect, with the objects directory whose alternates it may list. */
interface Inspection {
  directory: string;
  objects: string;
  depth: number;
}

/** The git directory of a work tree or bare repository, and the common dir it points to. */
function gitDirectoriesOf(repository: string): Inspection[] {
  const dotGit = path.join(repository, '.git');
  let gitDir: string;
  if (isDirectory(dotGit)) gitDir = dotGit;
  else if (existsSync(dotGit)) gitDir = path.resolve(repository, readPointer(dotGit, /^gitdir:\s*(.+)$/m) ?? refuse('the .git file is malformed'));
  else if (existsSync(path.join(repository, 'HEAD')) && isDirectory(path.join(repository, 'objects'))) gitDir = repository;
  else return refuse('the local path is not a git repository');
  const directories = [gitDir];
  const commonDir = readPointer(path.join(gitDir, 'commondir'), /^(.+)$/m);
  if (commonDir) directories.push(path.resolve(gitDir, commonDir));
  return directories.map((directory) => ({ directory, objects: path.join(directory, 'objects'), depth: 0 }));
}

/**
 * The object directories named by `<objects>/info/alternates`: absolute or relative to `objects`.
 * Quoted entries and URLs (which git may also accept) are refused outright.
 */
function alternatesOf(objects: string): string[] {
  const listed = readPointer(path.join(objects, 'info', 'alternates'), /^[\s\S]*$/) ?? '';
  const entries = listed.split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
  for (const entry of entries) {
    if (entry.startsWith('"') || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(entry)) refuse('the local repository lists an object alternate that is not a plain path');
  }
  // Joined, not resolved: a `..` applies after the symlinks before it, as the kernel does.
  return entries.map((entry) => (path.isAbsolute(entry) ? entry : `${objects}/${entry}`));
}

/** Every symlink below `directory` must lead inside the roots; directories it leads to are inspected too. */
async function checkSymlinks(directory: string, roots: readonly string[], inspected: Set<string>, budget: Budget): Promise<void> {
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    if (++budget.entries > MAX_ENTRIES_INSPECTED) refuse('the local repository is too large to inspect');
    if (performance.now() - budget.sliceStarted > SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      budget.sliceStarted = performance.now();
      if (Date.now() > budget.deadline) refuse('the local repository took too long to inspect');
    }
    const full = path.join(directory, entry.name);
    if (entry.isSymbolicLink()) {
      const target = canonicalizeInside(roots, full, directory);
      if (target.location === 'outside') refuse(`the local repository links ${path.basename(full)} outside every allowed workspace root`);
      if (target.exists && isDirectory(target.resolved) && !inspected.has(target.resolved)) {
        inspected.add(target.resolved);
        await checkSymlinks(target.resolved, roots, inspected, budget);
      }
    } else if (entry.isDirectory()) {
      await checkSymlinks(full, roots, inspected, budget);
    }
  }
}

function readPointer(file: string, pattern: RegExp): string | null {
  try {
    const match = pattern.exec(readFileSync(file, 'utf8'));
    return match ? (match[1] ?? match[0]).trim() : null;
  } catch {
    return null;
  }
}
