/**
 * `read_file`: a range of a text file's lines, numbered, within the model output budget. The file
 * is read through the boundary's executor (bounded by the sandbox protocol's read size).
 */
import { Type } from 'typebox';
import { MAX_READ_BYTES } from '../../sandbox/protocol.ts';
import { functionTool } from './arguments.ts';
import { executorOf } from './executor-of.ts';
import { MODEL_OUTPUT_LIMIT } from '../../exec/output.ts';
import { fileOperation, resolveToolPath } from './tool-paths.ts';
import { success, ToolError } from './types.ts';

const DEFAULT_READ_LINES = 2000;
const MAX_READ_LINES = 20_000;
const MAX_LINE_LENGTH = 2000;
const BINARY_SNIFF_BYTES = 8192;
/** What one read returns at most, on the host as in the sandbox; far beyond one answer's budget. */
const READ_FILE_MAX_BYTES = MAX_READ_BYTES;

export interface ReadFileArgs {
  path: string;
  offset: number;
  limit: number;
}

export const readFileTool = functionTool({
  name: 'read_file',
  description:
    'Reads a text file and returns its lines numbered from 1. Use offset (first line, 1-based) and ' +
    `limit (number of lines, default ${DEFAULT_READ_LINES}) to page through long files. Binary files are refused.`,
  arguments: Type.Object(
    {
      path: Type.String({ minLength: 1, description: 'file path, relative to the session cwd or absolute' }),
      offset: Type.Optional(Type.Integer({ minimum: 1, description: 'first line to show, 1-based' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_READ_LINES, description: 'number of lines to show' })),
    },
    { additionalProperties: false },
  ),
  refine: (args): ReadFileArgs => ({ path: args.path, offset: args.offset ?? 1, limit: args.limit ?? DEFAULT_READ_LINES }),
  plan: (args) => ({ readOnly: true, paths: [args.path] }),
  async run(args, ctx) {
    ctx.signal.throwIfAborted();
    const path = resolveToolPath(ctx, args.path);
    const file = await fileOperation(args.path, () => executorOf(ctx).readFile(path, READ_FILE_MAX_BYTES), {
      is_directory: 'is a directory; use list_dir to see its entries',
      not_a_file: 'is not a regular file',
    });
    if (looksBinary(file.content)) {
      throw new ToolError(`${args.path} looks like a binary file; read_file only shows text files`);
    }
    return numberedLines(file.content, file.truncated, args);
  },
});

/** The requested range of lines, numbered; a file cut at the read bound loses its partial last line. */
function numberedLines(content: Buffer, cut: boolean, args: ReadFileArgs) {
  let text = content.toString('utf8');
  if (cut) text = text.slice(0, Math.max(0, text.lastIndexOf('\n')));
  if (text === '' && !cut) return success(`${args.path} is empty`);
  const lines = text.split(/\r?\n/);
  if (text.endsWith('\n')) lines.pop();
  if (args.offset > lines.length) {
    const more = cut ? `; read_file reads the first ${READ_FILE_MAX_BYTES} bytes only, use shell (e.g. sed -n) beyond them` : '';
    throw new ToolError(`offset ${args.offset} is past the end of ${args.path} (${lines.length} lines${more})`);
  }
  const shown: string[] = [];
  let size = 0;
  let stoppedAt: number | null = null;
  let outOfBudget = false;
  for (let index = args.offset - 1; index < lines.length; index++) {
    if (shown.length === args.limit) {
      stoppedAt = index + 1;
      break;
    }
    const numbered = `${String(index + 1).padStart(6)}\t${clip(lines[index])}`;
    if (size + numbered.length + 1 > MODEL_OUTPUT_LIMIT) {
      stoppedAt = index + 1;
      outOfBudget = true;
      break;
    }
    shown.push(numbered);
    size += numbered.length + 1;
  }
  const footer =
    stoppedAt !== null ? `\n[… more lines follow; continue with offset=${stoppedAt} …]` : cut ? `\n[… the file goes on past the ${READ_FILE_MAX_BYTES} bytes read_file reads; use shell (e.g. sed -n) for the rest …]` : '';
  return success(shown.join('\n') + footer, outOfBudget || cut);
}

function clip(line: string): string {
  return line.length <= MAX_LINE_LENGTH ? line : `${line.slice(0, MAX_LINE_LENGTH)} [… line cut at ${MAX_LINE_LENGTH} characters]`;
}

/** The same heuristic git and grep use: a NUL byte near the start means binary. */
function looksBinary(content: Buffer): boolean {
  return content.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}
