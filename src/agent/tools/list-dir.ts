/**
 * `list_dir`: a bounded, sorted tree of a directory's entries, one executor listing per directory.
 * Symlinks are shown, never followed: on the host each directory is opened without following any
 * symlink (workspace/no-follow.ts), in the sandbox nothing outside the guest exists to follow.
 */
import { Type } from 'typebox';
import { ExecutorError, type DirectoryEntry, type ToolExecutor } from '../../exec/executor.ts';
import { functionTool } from './arguments.ts';
import { executorOf } from './executor-of.ts';
import { timeLimit, type TimeLimit } from './time-limit.ts';
import { displayPath, fileOperation, resolveToolPath } from './tool-paths.ts';
import { success } from './types.ts';

const DEFAULT_LIST_DEPTH = 2;
const MAX_LIST_DEPTH = 5;
export const MAX_LIST_ENTRIES = 500;
/** Listed but not expanded: they are large and rarely what the model is looking for. */
const UNEXPANDED = new Set(['.git', 'node_modules']);

export interface ListDirArgs {
  path: string;
  depth: number;
}

export const listDirTool = functionTool({
  name: 'list_dir',
  description:
    `Lists a directory as an indented tree (directories end with "/", symlinks with "@"). depth ` +
    `defaults to ${DEFAULT_LIST_DEPTH} (1 = direct entries only); at most ${MAX_LIST_ENTRIES} entries are shown.`,
  arguments: Type.Object(
    {
      path: Type.Optional(Type.String({ description: 'directory, relative to the session cwd; default "."' })),
      depth: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIST_DEPTH })),
    },
    { additionalProperties: false },
  ),
  refine: (args): ListDirArgs => ({ path: args.path || '.', depth: args.depth ?? DEFAULT_LIST_DEPTH }),
  plan: (args) => ({ readOnly: true, paths: [args.path] }),
  async run(args, ctx) {
    const limit = timeLimit(ctx.signal, 'list_dir');
    const executor = executorOf(ctx);
    const resolved = resolveToolPath(ctx, args.path);
    const top = await fileOperation(args.path, () => executor.listDirectory(resolved), { not_a_directory: 'is not a directory; use read_file for files' });
    const listing = { lines: [] as string[], full: false };
    await walk({ executor, limit, maxDepth: args.depth, listing }, resolved, top.entries, 1);
    const header = `${displayPath(ctx.cwd, resolved)}/`;
    if (listing.lines.length === 0) return success(`${header}\n(empty)`);
    const footer = listing.full ? `\n[… stopped after ${MAX_LIST_ENTRIES} entries; list a subdirectory or lower depth …]` : '';
    return success([header, ...listing.lines].join('\n') + footer, listing.full);
  },
});

interface Walk {
  executor: ToolExecutor;
  limit: TimeLimit;
  maxDepth: number;
  listing: { lines: string[]; full: boolean };
}

/** Lists `entries` of `directory` at `level`, descending into subdirectories; symlinks are shown, never followed. */
async function walk(walking: Walk, directory: string, entries: DirectoryEntry[], level: number): Promise<void> {
  const { listing, maxDepth } = walking;
  walking.limit.check();
  for (const entry of entries) {
    if (listing.lines.length >= MAX_LIST_ENTRIES) {
      listing.full = true;
      return;
    }
    if (entry.type === 'symlink') {
      listing.lines.push(`${indent(level)}${entry.name}@ -> ${entry.target ?? '?'}`);
    } else if (entry.type === 'directory') {
      const expand = level < maxDepth && !UNEXPANDED.has(entry.name);
      listing.lines.push(`${indent(level)}${entry.name}/${UNEXPANDED.has(entry.name) && level < maxDepth ? ' (not expanded)' : ''}`);
      if (expand) await walkChild(walking, `${directory}/${entry.name}`, level + 1);
    } else {
      listing.lines.push(`${indent(level)}${entry.name}`);
    }
  }
}

/** A subdirectory that cannot be listed (unreadable, or swapped for a symlink since) is reported, not followed. */
async function walkChild(walking: Walk, directory: string, level: number): Promise<void> {
  let entries: DirectoryEntry[];
  try {
    entries = (await walking.executor.listDirectory(directory)).entries;
  } catch (error) {
    if (!(error instanceof ExecutorError) || error.reason !== 'operation') throw error;
    walking.listing.lines.push(`${indent(level)}[unreadable: ${/symbolic link/.test(error.message) ? 'replaced by a symbolic link' : (error.problem ?? 'error')}]`);
    return;
  }
  await walk(walking, directory, entries, level);
}

function indent(level: number): string {
  return '  '.repeat(level);
}
