/**
 * Applies parsed patch operations all-or-nothing: every hunk of every file is located and the new
 * contents computed in memory first; only then are files written. Should a write still fail, the
 * files already written are restored from their snapshots. The file operations themselves never
 * follow a symlink swapped in after the paths were checked (exec/patch-files.ts).
 */
import { oldLinesOf, PatchError, type Hunk, type HunkLine, type PatchOperation } from './parse.ts';

/** How the patch reaches the files: the boundary's executor (exec/patch-files.ts). */
export interface PatchFiles {
  /** the file's text, or null when there is none */
  read(file: string): Promise<string | null>;
  /** replaces the file whole, creating missing parents */
  write(file: string, contents: string): Promise<void>;
  /** removes the file; one already gone is fine */
  remove(file: string): Promise<void>;
}

export interface AppliedChange {
  kind: 'added' | 'modified' | 'deleted';
  /** the path as written in the patch (the destination for a move) */
  path: string;
  movedFrom?: string;
}

/** new contents per absolute path; null deletes the file */
type PlannedWrites = Map<string, string | null>;

/**
 * @param resolve maps a path as written in the patch to the absolute path to use (and throws for
 *   paths that must not be touched)
 */
export async function applyPatchOperations(
  operations: PatchOperation[],
  resolve: (requested: string) => string,
  files: PatchFiles,
): Promise<AppliedChange[]> {
  const planned: PlannedWrites = new Map();
  const changes: AppliedChange[] = [];
  const current = async (file: string) => (planned.has(file) ? planned.get(file)! : files.read(file));
  for (const operation of operations) {
    const file = resolve(operation.path);
    const existing = await current(file);
    if (operation.type === 'add') {
      if (existing !== null) throw new PatchError(`cannot add ${operation.path}: it already exists (use "*** Update File:")`);
      planned.set(file, operation.contents);
      changes.push({ kind: 'added', path: operation.path });
    } else if (operation.type === 'delete') {
      if (existing === null) throw new PatchError(`cannot delete ${operation.path}: no such file`);
      planned.set(file, null);
      changes.push({ kind: 'deleted', path: operation.path });
    } else {
      if (existing === null) throw new PatchError(`cannot update ${operation.path}: no such file`);
      const updated = applyHunks(existing, operation.hunks, operation.path);
      if (operation.moveTo === null) {
        planned.set(file, updated);
        changes.push({ kind: 'modified', path: operation.path });
        continue;
      }
      const destination = resolve(operation.moveTo);
      if (destination !== file && (await current(destination)) !== null) {
        throw new PatchError(`cannot move ${operation.path} to ${operation.moveTo}: the destination exists`);
      }
      planned.set(file, null);
      planned.set(destination, updated);
      changes.push({ kind: 'modified', path: operation.moveTo, movedFrom: operation.path });
    }
  }
  await writeAllOrRestore(planned, files);
  return changes;
}

/** File text after applying hunks in order; throws PatchError naming the first hunk that does not fit. */
export function applyHunks(original: string, hunks: Hunk[], displayName: string): string {
  const newline = original.includes('\r\n') ? '\r\n' : '\n';
  const endsWithNewline = original.endsWith(newline);
  const lines = original === '' ? [] : original.split(newline);
  if (endsWithNewline) lines.pop();
  const replacements: { at: number; remove: number; insert: string[] }[] = [];
  let cursor = 0;
  for (const hunk of hunks) {
    for (const context of hunk.contexts) {
      const found = seekSequence(lines, [context], cursor, false);
      if (found === -1) throw new PatchError(`${displayName}: context line not found: "${context}"`);
      cursor = found + 1;
    }
    let hunkLines = hunk.lines;
    let oldLines = oldLinesOf(hunk);
    if (oldLines.length === 0) {
      const at = hunk.contexts.length > 0 && !hunk.endOfFile ? cursor : lines.length;
      replacements.push({ at, remove: 0, insert: hunkLines.map((line) => line.text) });
      continue;
    }
    let found = seekSequence(lines, oldLines, cursor, hunk.endOfFile);
    const last = hunkLines[hunkLines.length - 1];
    if (found === -1 && last.op === ' ' && last.text === '') {
      // A trailing blank context line often stands for the file's final newline.
      hunkLines = hunkLines.slice(0, -1);
      oldLines = oldLines.slice(0, -1);
      found = seekSequence(lines, oldLines, cursor, hunk.endOfFile);
    }
    if (found === -1) {
      const where = hunk.endOfFile ? ' at the end of the file' : '';
      throw new PatchError(`${displayName}: could not find these lines${where}:\n${oldLinesOf(hunk).join('\n')}`);
    }
    replacements.push({ at: found, remove: oldLines.length, insert: replacementLines(hunkLines, lines, found) });
    cursor = found + oldLines.length;
  }
  for (const { at, remove, insert } of replacements.sort((a, b) => b.at - a.at)) lines.splice(at, remove, ...insert);
  if (lines.length === 0) return '';
  return lines.join(newline) + (endsWithNewline || original === '' ? newline : '');
}

/** The hunk's new lines; context lines keep the file's own text, which may differ in whitespace. */
function replacementLines(hunkLines: HunkLine[], fileLines: string[], matchedAt: number): string[] {
  const result: string[] = [];
  let fileIndex = matchedAt;
  for (const line of hunkLines) {
    if (line.op === ' ') result.push(fileLines[fileIndex++]);
    else if (line.op === '-') fileIndex++;
    else result.push(line.text);
  }
  return result;
}

const LINE_COMPARISONS = [
  (a: string, b: string) => a === b,
  (a: string, b: string) => a.trimEnd() === b.trimEnd(),
  (a: string, b: string) => a.trim() === b.trim(),
];

/**
 * The first index at or after `start` where `pattern` matches: exactly, then ignoring trailing
 * whitespace, then ignoring surrounding whitespace. With `atEnd`, a match ending at the last line wins.
 */
function seekSequence(lines: string[], pattern: string[], start: number, atEnd: boolean): number {
  for (const same of LINE_COMPARISONS) {
    const matchesAt = (index: number) => pattern.every((line, offset) => same(lines[index + offset], line));
    if (atEnd) {
      const endIndex = lines.length - pattern.length;
      if (endIndex >= start && matchesAt(endIndex)) return endIndex;
    }
    for (let index = start; index <= lines.length - pattern.length; index++) {
      if (matchesAt(index)) return index;
    }
  }
  return -1;
}

async function writeAllOrRestore(planned: PlannedWrites, files: PatchFiles): Promise<void> {
  const snapshots = new Map<string, string | null>();
  try {
    for (const [file, contents] of planned) {
      snapshots.set(file, await files.read(file));
      if (contents === null) await files.remove(file);
      else await files.write(file, contents);
    }
  } catch (error) {
    for (const [file, original] of snapshots) {
      try {
        if (original === null) await files.remove(file);
        else await files.write(file, original);
      } catch {
        // best effort: the original error is the one to report
      }
    }
    throw error;
  }
}
