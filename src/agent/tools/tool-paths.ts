/**
 * The run-time half of path containment. The policy has already judged the plan's paths, but a tool
 * re-checks each one as it uses it (the tree may have changed since), and only ever touches the
 * canonical path: a path outside every root fails here whatever the policy said. The executor
 * then opens it without following a symlink swapped in after the check (host), or inside the
 * sandbox, where nothing else exists (guest).
 */
import { ExecutorError, type FileProblem } from '../../exec/executor.ts';
import { classifyGuestPath } from '../../sandbox/guest-paths.ts';
import { canonicalizeInside, PathError, type PathClassification } from '../../workspace/paths.ts';
import { ToolError, type ToolContext } from './types.ts';

type PathContext = Pick<ToolContext, 'cwd' | 'roots' | 'executor'>;

/**
 * Where `requested` lies, in the executor's terms: on the host every symlink is followed
 * (workspace/paths.ts); in the sandbox `cwd` and `roots` are guest paths, resolved lexically.
 */
export function classifyToolPath(ctx: PathContext, requested: string): PathClassification {
  return ctx.executor?.kind === 'sandbox' ? classifyGuestPath(ctx.roots, requested, ctx.cwd) : canonicalizeInside(ctx.roots, requested, ctx.cwd);
}

export function resolveToolPath(ctx: PathContext, requested: string): string {
  let classification;
  try {
    classification = classifyToolPath(ctx, requested);
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
 * Runs a file operation of the executor; its refusals become errors meant for the model, naming
 * the path as the model wrote it. A failed sandbox passes through: the registry reports it.
 */
export async function fileOperation<T>(requested: string, action: () => Promise<T>, problems: Partial<Record<FileProblem, string>> = {}): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (!(error instanceof ExecutorError) || error.reason !== 'operation') throw error;
    if (error.problem && problems[error.problem]) throw new ToolError(`${requested} ${problems[error.problem]}`);
    if (error.problem === 'not_found') throw new ToolError(`${requested} does not exist`);
    throw new ToolError(error.message);
  }
}

/** How a path is shown to the model: relative to the cwd when inside it, absolute otherwise. */
export function displayPath(cwd: string, absolute: string): string {
  if (absolute === cwd) return '.';
  return absolute.startsWith(`${cwd}/`) ? absolute.slice(cwd.length + 1) : absolute;
}
