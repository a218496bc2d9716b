/**
 * `list_dir`: a bounded, sorted tree of a directory's entries. Symlinks are shown, never followed:
 * each subdirectory is opened from its open parent with O_NOFOLLOW (workspace/no-follow.ts).
 */
import { readdir, readlink } from 'node:fs/promises';
import { closeDirectory, directoryPath, entryPath, openChildDirectory, openDirectoryExact, UnsafePathError, type OpenDirectory } from '../../workspace/no-follow.ts';
import { Type } from 'typebox';
import { functionTool } from './arguments.ts';
import { timeLimit, type TimeLimit } from './time-limit.ts';
import { displayPath, resolveToolPath, toolErrors } from './tool-paths.ts';
import { success, ToolError } from './types.ts';

export const DEFAULT_LIST_DEPTH = 2;
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
    const resolved = resolveToolPath(ctx, args.path);
    const directory = toolErrors(args.path, () => {
      try {
        return openDirectoryExact(resolved);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') throw new ToolError(`${args.path} is not a directory; use read_file for files`);
        throw error;
      }
    });
    const listing = { lines: [] as string[], full: false };
    try {
      await walk(directory, 1, args.depth, listing, limit);
    } finally {
      closeDirectory(directory);
    }
    const header = `${displayPath(ctx.cwd, resolved)}/`;
    if (listing.lines.length === 0) return success(`${header}\n(empty)`);
    const footer = listing.full ? `\n[… stopped after ${MAX_LIST_ENTRIES} entries; list a subdirectory or lower depth …]` : '';
    return success([header, ...listing.lines].join('\n') + footer, listing.full);
  },
});

async function walk(
  directory: OpenDirectory,
  level: number,
  maxDepth: number,
  listing: { lines: string[]; full: boolean },
  limit: TimeLimit,
): Promise<void> {
  limit.check();
  let entries;
  try {
    entries = await readdir(directoryPath(directory), { withFileTypes: true });
  } catch (error) {
    listing.lines.push(`${indent(level)}[unreadable: ${(error as NodeJS.ErrnoException).code ?? 'error'}]`);
    return;
  }
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    if (listing.lines.length >= MAX_LIST_ENTRIES) {
      listing.full = true;
      return;
    }
    if (entry.isSymbolicLink()) {
      const target = await readlink(entryPath(directory, entry.name)).catch(() => '?');
      listing.lines.push(`${indent(level)}${entry.name}@ -> ${target}`);
    } else if (entry.isDirectory()) {
      const expand = level < maxDepth && !UNEXPANDED.has(entry.name);
      listing.lines.push(`${indent(level)}${entry.name}/${UNEXPANDED.has(entry.name) && level < maxDepth ? ' (not expanded)' : ''}`);
      if (expand) await walkChild(directory, entry.name, level + 1, maxDepth, listing, limit);
    } else {
      listing.lines.push(`${indent(level)}${entry.name}`);
    }
  }
}

/** A subdirectory swapped for a symlink since it was listed is reported, not followed. */
async function walkChild(
  parent: OpenDirectory,
  name: string,
  level: number,
  maxDepth: number,
  listing: { lines: string[]; full: boolean },
  limit: TimeLimit,
): Promise<void> {
  let child: OpenDirectory;
  try {
    child = openChildDirectory(parent, name);
  } catch (error) {
    const why = error instanceof UnsafePathError ? 'replaced by a symbolic link' : ((error as NodeJS.ErrnoException).code ?? 'error');
    listing.lines.push(`${indent(level)}[unreadable: ${why}]`);
    return;
  }
  try {
    await walk(child, level, maxDepth, listing, limit);
  } finally {
    closeDirectory(child);
  }
}

function indent(level: number): string {
  return '  '.repeat(level);
}
