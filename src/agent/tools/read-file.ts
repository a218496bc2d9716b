/** `read_file`: a range of a text file's lines, numbered, within the model output budget. */
import { closeSync, createReadStream, readSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Type } from 'typebox';
import { functionTool } from './arguments.ts';
import { MODEL_OUTPUT_LIMIT } from './output.ts';
import { timeLimit, type TimeLimit } from './time-limit.ts';
import { openToolPath } from './tool-paths.ts';
import { success, ToolError } from './types.ts';

export const DEFAULT_READ_LINES = 2000;
const MAX_READ_LINES = 20_000;
const MAX_LINE_LENGTH = 2000;
const BINARY_SNIFF_BYTES = 8192;

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
    const limit = timeLimit(ctx.signal, 'read_file');
    // Opened once: every check below and the read itself concern this descriptor, not the name.
    const { fd, info } = openToolPath(ctx, args.path);
    let streaming = false;
    try {
      if (info.isDirectory()) throw new ToolError(`${args.path} is a directory; use list_dir to see its entries`);
      if (!info.isFile()) throw new ToolError(`${args.path} is not a regular file`);
      if (looksBinary(fd)) {
        throw new ToolError(`${args.path} looks like a binary file (${info.size} bytes); read_file only shows text files`);
      }
      streaming = true;
      return await readLines(fd, args, limit);
    } finally {
      if (!streaming) closeSync(fd);
    }
  },
});

/** Streams the lines of the open file; the stream owns (and closes) the descriptor. */
async function readLines(fd: number, args: ReadFileArgs, limit: TimeLimit) {
  const input = createReadStream('', { fd, start: 0, encoding: 'utf8', signal: limit.signal });
  const lines = createInterface({ input, crlfDelay: Infinity });
  const shown: string[] = [];
  let size = 0;
  let lineNumber = 0;
  let stoppedAt: number | null = null;
  let outOfBudget = false;
  try {
    for await (const line of lines) {
      lineNumber++;
      if (lineNumber < args.offset) continue;
      if (shown.length === args.limit) {
        stoppedAt = lineNumber;
        break;
      }
      const numbered = `${String(lineNumber).padStart(6)}\t${clip(line)}`;
      if (size + numbered.length + 1 > MODEL_OUTPUT_LIMIT) {
        stoppedAt = lineNumber;
        outOfBudget = true;
        break;
      }
      shown.push(numbered);
      size += numbered.length + 1;
    }
  } catch (error) {
    limit.check();
    throw error;
  } finally {
    lines.close();
    input.destroy();
  }
  if (shown.length === 0 && lineNumber < args.offset && lineNumber > 0) {
    throw new ToolError(`offset ${args.offset} is past the end of ${args.path} (${lineNumber} lines)`);
  }
  if (lineNumber === 0) return success(`${args.path} is empty`);
  const footer = stoppedAt === null ? '' : `\n[… more lines follow; continue with offset=${stoppedAt} …]`;
  return success(shown.join('\n') + footer, outOfBudget);
}

function clip(line: string): string {
  return line.length <= MAX_LINE_LENGTH ? line : `${line.slice(0, MAX_LINE_LENGTH)} [… line cut at ${MAX_LINE_LENGTH} characters]`;
}

/** The same heuristic git and grep use: a NUL byte near the start means binary. */
function looksBinary(fd: number): boolean {
  const buffer = Buffer.alloc(BINARY_SNIFF_BYTES);
  const bytesRead = readSync(fd, buffer, 0, BINARY_SNIFF_BYTES, 0);
  return buffer.subarray(0, bytesRead).includes(0);
}
