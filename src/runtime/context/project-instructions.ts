import path from 'node:path';
import { ExecutorError, type ToolExecutor } from '../../exec/executor.ts';
import type { WorkspaceView } from '../../exec/boundary-tools.ts';

/** What all of a turn's AGENTS.md files may bring to the model together (CONTRACT.md §19). */
const PROJECT_INSTRUCTIONS_MAX_BYTES = 32 * 1024;
const PROJECT_INSTRUCTIONS_FILE = 'AGENTS.md';
const TRUNCATION_NOTE = '[AGENTS.md truncated: the project instructions are limited to 32 KiB]';

/**
 * The project's instructions for one turn: `AGENTS.md` of every directory from the workspace root
 * that holds the session's cwd down to the cwd, outermost first, read through the boundary's
 * executor (inside the sandbox where there is one, without following a symbolic link, as every
 * file tool reads). Null when there is none. A name that is not a readable regular file (missing,
 * a directory, a link) is passed over; a sandbox that cannot answer throws (the turn runner goes on without them).
 */
export async function readProjectInstructions(executor: ToolExecutor, view: WorkspaceView): Promise<string | null> {
  const sections: string[] = [];
  let room = PROJECT_INSTRUCTIONS_MAX_BYTES;
  for (const directory of directoriesFromRoot(view)) {
    const file = path.posix.join(directory, PROJECT_INSTRUCTIONS_FILE);
    const read = await readIfPresent(executor, file, room);
    if (read === null) continue;
    const text = wholeCharacters(read.content);
    if (text.trim() === '') continue;
    sections.push(`## ${file}\n${text}${read.cut ? `\n${TRUNCATION_NOTE}` : ''}`);
    room -= read.content.length;
    if (read.cut || room <= 0) break;
  }
  if (sections.length === 0) return null;
  return `# Project instructions\nThe project's AGENTS.md files, the outermost first; a deeper file refines the ones above it.\n\n${sections.join('\n\n')}`;
}

/** The server's own instructions, then the project's (never user text). */
export function withProjectInstructions(own: string, project: string | null): string {
  return project === null ? own : `${own}\n\n${project}`;
}

/** The root that holds the cwd (the deepest, should roots nest), then each directory down to the cwd. */
function directoriesFromRoot(view: WorkspaceView): string[] {
  const inside = (root: string) => view.cwd === root || view.cwd.startsWith(root.endsWith('/') ? root : `${root}/`);
  const root = [...view.roots].filter(inside).sort((a, b) => b.length - a.length)[0];
  if (root === undefined) return [view.cwd];
  const below = path.posix.relative(root, view.cwd).split('/').filter((part) => part !== '');
  const directories = [root];
  for (const part of below) directories.push(path.posix.join(directories[directories.length - 1], part));
  return directories;
}

async function readIfPresent(executor: ToolExecutor, file: string, room: number): Promise<{ content: Buffer; cut: boolean } | null> {
  try {
    const { content, truncated } = await executor.readFile(file, room);
    return { content, cut: truncated };
  } catch (error) {
    // missing, not a regular file, or a symbolic link the no-follow open refused
    if (error instanceof ExecutorError && error.reason === 'operation') return null;
    throw error;
  }
}

/** UTF-8 text; a character the byte limit cut in two is left out rather than shown broken. */
function wholeCharacters(content: Buffer): string {
  let end = content.length;
  // step back over continuation bytes to the start of the last character, and drop it if incomplete
  let start = end - 1;
  while (start > 0 && start > end - 4 && (content[start] & 0xc0) === 0x80) start--;
  if (start >= 0 && start < end) {
    const lead = content[start];
    const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (start + length > end) end = start;
  }
  return content.subarray(0, end).toString('utf8');
}
