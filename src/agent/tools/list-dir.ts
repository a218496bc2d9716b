/** `list_dir`: a bounded, sorted tree of a directory's entries. Symlinks are shown, never followed. */
import { readdir, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import { optionalInteger, optionalString, parseJsonArguments } from './arguments.ts';
import { displayPath, resolveToolPath } from './tool-paths.ts';
import { success, ToolError, type Tool } from './types.ts';

export const DEFAULT_LIST_DEPTH = 2;
const MAX_LIST_DEPTH = 5;
export const MAX_LIST_ENTRIES = 500;
/** Listed but not expanded: they are large and rarely what the model is looking for. */
const UNEXPANDED = new Set(['.git', 'node_modules']);

export interface ListDirArgs {
  path: string;
  depth: number;
}

export const listDirTool: Tool<ListDirArgs> = {
  name: 'list_dir',
  kind: 'function',
  description:
    `Lists a directory as an indented tree (directories end with "/", symlinks with "@"). depth ` +
    `defaults to ${DEFAULT_LIST_DEPTH} (1 = direct entries only); at most ${MAX_LIST_ENTRIES} entries are shown.`,
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'directory, relative to the session cwd; default "."' },
      depth: { type: 'integer', minimum: 1, maximum: MAX_LIST_DEPTH },
    },
    additionalProperties: false,
  },
  parse(input) {
    const args = parseJsonArguments(input, ['path', 'depth']);
    return {
      path: optionalString(args, 'path') || '.',
      depth: optionalInteger(args, 'depth', 1, MAX_LIST_DEPTH) ?? DEFAULT_LIST_DEPTH,
    };
  },
  plan: (args) => ({ readOnly: true, paths: [args.path] }),
  async run(args, ctx) {
    const directory = resolveToolPath(ctx, args.path);
    const info = await stat(directory).catch(() => null);
    if (info === null) throw new ToolError(`${args.path} does not exist`);
    if (!info.isDirectory()) throw new ToolError(`${args.path} is not a directory; use read_file for files`);
    const listing = { lines: [] as string[], full: false };
    await walk(directory, 1, args.depth, listing, ctx.signal);
    const header = `${displayPath(ctx.cwd, directory)}/`;
    if (listing.lines.length === 0) return success(`${header}\n(empty)`);
    const footer = listing.full ? `\n[… stopped after ${MAX_LIST_ENTRIES} entries; list a subdirectory or lower depth …]` : '';
    return success([header, ...listing.lines].join('\n') + footer, listing.full);
  },
};

async function walk(
  directory: string,
  level: number,
  maxDepth: number,
  listing: { lines: string[]; full: boolean },
  signal: AbortSignal,
): Promise<void> {
  signal.throwIfAborted();
  let entries;
  try {
    entries = await readdir(directory, { withFileTypes: true });
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
    const full = path.join(directory, entry.name);
    if (entry.isSymbolicLink()) {
      const target = await readlink(full).catch(() => '?');
      listing.lines.push(`${indent(level)}${entry.name}@ -> ${target}`);
    } else if (entry.isDirectory()) {
      const expand = level < maxDepth && !UNEXPANDED.has(entry.name);
      listing.lines.push(`${indent(level)}${entry.name}/${UNEXPANDED.has(entry.name) && level < maxDepth ? ' (not expanded)' : ''}`);
      if (expand) await walk(full, level + 1, maxDepth, listing, signal);
    } else {
      listing.lines.push(`${indent(level)}${entry.name}`);
    }
  }
}

function indent(level: number): string {
  return '  '.repeat(level);
}
