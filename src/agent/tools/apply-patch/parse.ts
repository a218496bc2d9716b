/**
 * Parser for the apply_patch format:
 *
 *   *** Begin Patch
 *   *** Add File: path          followed by "+" lines: the new file's contents
 *   *** Delete File: path
 *   *** Update File: path       optionally followed by "*** Move to: new/path", then hunks:
 *   @@ optional context line    jumps to the line matching the text after "@@ "
 *    context / -removed / +added lines; "*** End of File" anchors a hunk at the file's end
 *   *** End Patch
 */

export type PatchOperation =
  | { type: 'add'; path: string; contents: string }
  | { type: 'delete'; path: string }
  | { type: 'update'; path: string; moveTo: string | null; hunks: Hunk[] };

export interface Hunk {
  /** the texts after successive "@@ " lines; each one is located before the lines are matched */
  contexts: string[];
  lines: HunkLine[];
  /** the hunk must match at the end of the file */
  endOfFile: boolean;
}

/** ' ' keeps a line, '-' removes it, '+' adds one */
export interface HunkLine {
  op: ' ' | '-' | '+';
  text: string;
}

/** The lines a hunk expects to find in the file. */
export function oldLinesOf(hunk: Hunk): string[] {
  return hunk.lines.filter((line) => line.op !== '+').map((line) => line.text);
}

export class PatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PatchError';
  }
}

const BEGIN = '*** Begin Patch';
const END = '*** End Patch';
const ADD = '*** Add File: ';
const DELETE = '*** Delete File: ';
const UPDATE = '*** Update File: ';
const MOVE = '*** Move to: ';
const END_OF_FILE = '*** End of File';

export function parsePatch(text: string): PatchOperation[] {
  const lines = text.trim().split(/\r?\n/);
  if (lines[0].trim() !== BEGIN) throw new PatchError(`the first line must be "${BEGIN}"`);
  if (lines.length < 2 || lines[lines.length - 1].trim() !== END) throw new PatchError(`the last line must be "${END}"`);
  const body = lines.slice(1, -1);
  const operations: PatchOperation[] = [];
  let index = 0;
  while (index < body.length) {
    const header = body[index];
    const lineNumber = index + 2;
    index++;
    if (header.startsWith(ADD)) {
      const contents: string[] = [];
      while (index < body.length && !isFileHeader(body[index])) {
        if (!body[index].startsWith('+')) throw new PatchError(`line ${index + 2}: lines of an added file must start with "+"`);
        contents.push(body[index].slice(1));
        index++;
      }
      operations.push({ type: 'add', path: pathOf(header, ADD, lineNumber), contents: contents.map((line) => `${line}\n`).join('') });
    } else if (header.startsWith(DELETE)) {
      operations.push({ type: 'delete', path: pathOf(header, DELETE, lineNumber) });
    } else if (header.startsWith(UPDATE)) {
      let moveTo: string | null = null;
      if (index < body.length && body[index].startsWith(MOVE)) {
        moveTo = pathOf(body[index], MOVE, index + 2);
        index++;
      }
      const start = index;
      while (index < body.length && !isFileHeader(body[index])) index++;
      const hunks = parseHunks(body.slice(start, index), start + 2);
      if (hunks.length === 0 && moveTo === null) throw new PatchError(`line ${lineNumber}: "${header}" has no changes`);
      operations.push({ type: 'update', path: pathOf(header, UPDATE, lineNumber), moveTo, hunks });
    } else if (header.trim() !== '') {
      throw new PatchError(`line ${lineNumber}: expected a file header ("*** Add File:", "*** Update File:" or "*** Delete File:"), got "${header}"`);
    }
  }
  if (operations.length === 0) throw new PatchError('the patch changes no files');
  return operations;
}

function parseHunks(lines: string[], firstLineNumber: number): Hunk[] {
  const hunks: Hunk[] = [];
  let current: Hunk | null = null;
  const fresh = (): Hunk => ({ contexts: [], lines: [], endOfFile: false });
  lines.forEach((line, offset) => {
    if (line === '@@' || line.startsWith('@@ ')) {
      // Consecutive "@@" lines narrow the position step by step (class, then method).
      if (current === null || current.lines.length > 0) {
        current = fresh();
        hunks.push(current);
      }
      if (line !== '@@') current.contexts.push(line.slice(3));
      return;
    }
    if (line.trim() === END_OF_FILE) {
      if (current === null) throw new PatchError(`line ${firstLineNumber + offset}: "${END_OF_FILE}" outside a hunk`);
      current.endOfFile = true;
      return;
    }
    if (current === null) {
      current = fresh();
      hunks.push(current);
    }
    const marker = line[0] as HunkLine['op'];
    const content = line.slice(1);
    // An empty line is an empty context line: editors often strip the lone space.
    if (line === '' || marker === ' ' || marker === '-' || marker === '+') {
      current.lines.push({ op: line === '' ? ' ' : marker, text: content });
    } else {
      throw new PatchError(`line ${firstLineNumber + offset}: hunk lines must start with " ", "-" or "+", got "${line}"`);
    }
  });
  return hunks.filter((hunk) => hunk.lines.length > 0);
}

function isFileHeader(line: string): boolean {
  return line.startsWith(ADD) || line.startsWith(DELETE) || line.startsWith(UPDATE) || line.trim() === END;
}

function pathOf(line: string, prefix: string, lineNumber: number): string {
  const value = line.slice(prefix.length).trim();
  if (value === '') throw new PatchError(`line ${lineNumber}: "${prefix.trim()}" needs a path`);
  return value;
}
