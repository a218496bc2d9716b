/**
 * `apply_patch`: one implementation, two shapes. On the OpenAI Responses dialect it is a custom
 * (freeform) tool whose input is the patch text itself; elsewhere a function tool `{ patch }`.
 * Files are read, written and removed through the boundary's executor (the sandbox when there is one).
 */
import { PathError } from '../../../workspace/paths.ts';
import { Type } from 'typebox';
import { argumentsParser, modelSchema } from '../arguments.ts';
import { resolveToolPath } from '../tool-paths.ts';
import { success, ToolError, type Tool } from '../types.ts';
import { ExecutorError, type ToolExecutor } from '../../../exec/executor.ts';
import { executorOf } from '../executor-of.ts';
import { applyPatchOperations, type AppliedChange, type PatchFiles } from './apply.ts';
import { parsePatch, PatchError, type PatchOperation } from './parse.ts';

export interface ApplyPatchArgs {
  patch: string;
  operations: PatchOperation[];
}

const FORMAT_GUIDE = `Edits files with a patch. Format:
*** Begin Patch
*** Add File: path/new.txt
+first line of the new file
*** Update File: path/existing.ts
*** Move to: path/renamed.ts        (optional)
@@ function or class line near the change (optional)
 unchanged context line
-removed line
+added line
*** End of File                      (optional: the hunk is at the end of the file)
*** Delete File: path/obsolete.txt
*** End Patch
Paths are relative to the session working directory. Give about 3 lines of context around each
change. The whole patch applies or nothing does.`;

/** The function-tool shape: `{ patch }`. */
const PatchArguments = Type.Object(
  { patch: Type.String({ minLength: 1, description: 'the whole patch, from "*** Begin Patch" to "*** End Patch"' }) },
  { additionalProperties: false },
);
const parsePatchArguments = argumentsParser(PatchArguments);

export function createApplyPatchTool(kind: 'custom' | 'function'): Tool<ApplyPatchArgs> {
  const shape = kind === 'custom' ? { format: { type: 'text' as const } } : { parameters: modelSchema(PatchArguments) };
  return {
    name: 'apply_patch',
    kind,
    executes: true,
    description: FORMAT_GUIDE,
    ...shape,
    parse(input) {
      const patch = kind === 'custom' ? input : parsePatchArguments(input).patch;
      try {
        return { patch, operations: parsePatch(patch) };
      } catch (error) {
        if (error instanceof PatchError) throw new ToolError(`invalid patch: ${error.message}`);
        throw error;
      }
    },
    plan: (args) => ({ readOnly: false, paths: pathsOf(args.operations) }),
    async run(args, ctx) {
      ctx.signal.throwIfAborted();
      let changes: AppliedChange[];
      try {
        changes = await applyPatchOperations(args.operations, (requested) => resolveToolPath(ctx, requested), patchFilesOn(executorOf(ctx)));
      } catch (error) {
        const refused = error instanceof ExecutorError && error.reason === 'operation';
        if (error instanceof PatchError || error instanceof PathError || refused) {
          throw new ToolError(`patch not applied, no file was changed: ${error.message}`);
        }
        throw error;
      }
      return success(['Success. Updated the following files:', ...changes.map(describeChange)].join('\n'));
    },
  };
}

/** What one file of a patch may weigh: the sandbox reads at most its protocol's bound anyway. */
const PATCHED_FILE_MAX_BYTES = 16 * 1024 * 1024;

/** The patch's file operations on the boundary's executor. */
function patchFilesOn(executor: ToolExecutor): PatchFiles {
  return {
    async read(file) {
      let read;
      try {
        read = await executor.readFile(file, PATCHED_FILE_MAX_BYTES);
      } catch (error) {
        if (error instanceof ExecutorError && error.problem === 'not_found') return null;
        throw error;
      }
      if (read.truncated) throw new PatchError(`${file} is too large to patch here; edit it with a shell command`);
      return read.content.toString('utf8');
    },
    write: (file, contents) => executor.writeFile(file, Buffer.from(contents, 'utf8'), { createParents: true }),
    remove: (file) => executor.removeFile(file),
  };
}

export const applyPatchCustomTool = createApplyPatchTool('custom');
export const applyPatchFunctionTool = createApplyPatchTool('function');

function pathsOf(operations: PatchOperation[]): string[] {
  return operations.flatMap((operation) =>
    operation.type === 'update' && operation.moveTo !== null ? [operation.path, operation.moveTo] : [operation.path],
  );
}

function describeChange(change: AppliedChange): string {
  const letter = { added: 'A', modified: 'M', deleted: 'D' }[change.kind];
  return change.movedFrom ? `${letter} ${change.path} (moved from ${change.movedFrom})` : `${letter} ${change.path}`;
}
