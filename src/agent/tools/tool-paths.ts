/**
 * The run-time half of path containment. The policy has already judged the plan's paths, but a tool
 * re-checks each one as it uses it (the tree may have changed since), and only ever touches the
 * canonical path: a path outside every root fails here whatever the policy said.
 */
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

/** How a path is shown to the model: relative to the cwd when inside it, absolute otherwise. */
export function displayPath(cwd: string, absolute: string): string {
  if (absolute === cwd) return '.';
  return absolute.startsWith(`${cwd}/`) ? absolute.slice(cwd.length + 1) : absolute;
}
