/**
 * The run-time half of path containment. The policy has already judged the plan's paths, but a tool
 * re-checks each one as it uses it (the tree may have changed since), and only ever touches the
 * canonical path: a path outside every root fails here whatever the policy said. Opening goes
 * through workspace/no-follow.ts, so a symlink swapped in after the check is refused, not followed.
 */
import { constants, fstatSync, type Stats } from 'node:fs';
import { openExact } from '../../workspace/no-follow.ts';
import { canonicalizeInside, PathError } from '../../workspace/paths.ts';
import { ToolError, type ToolContext } from './types.ts';

export function resolveToolPath(ctx: Pick<ToolContext, 'cwd' | 'roots'>, requested: string): string {
  let classification;
  try {
    classification = canonicalizeInside(ctx.roots, requested, ctx.cwd);
  } catch (error) {
    if (error instanceof PathError) throw new ToolError(error.message);
    throw error;
  }
  if (classification.location === 'outside') {
    throw new ToolError(`${requested} is outside every allowed workspace root`);
  }
  return classification.resolved;
}

/**
 * Resolves and opens `requested` read-only in one go: the descriptor is the checked path itself.
 * O_NONBLOCK keeps a FIFO swapped in from hanging the open; it changes nothing for regular files.
 */
export function openToolPath(ctx: Pick<ToolContext, 'cwd' | 'roots'>, requested: string): { fd: number; resolved: string; info: Stats } {
  const resolved = resolveToolPath(ctx, requested);
  const fd = toolErrors(requested, () => openExact(resolved, constants.O_RDONLY | constants.O_NONBLOCK));
  return { fd, resolved, info: fstatSync(fd) };
}

/** Runs `action`, turning path refusals and a missing file into errors meant for the model. */
export function toolErrors<T>(requested: string, action: () => T): T {
  try {
    return action();
  } catch (error) {
    if (error instanceof PathError) throw new ToolError(error.message);
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ToolError(`${requested} does not exist`);
    throw error;
  }
}

/** How a path is shown to the model: relative to the cwd when inside it, absolute otherwise. */
export function displayPath(cwd: string, absolute: string): string {
  if (absolute === cwd) return '.';
  return absolute.startsWith(`${cwd}/`) ? absolute.slice(cwd.length + 1) : absolute;
}
