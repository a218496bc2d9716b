import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, relative, resolve, sep } from 'node:path';

/** The largest file an `@path` mention attaches. */
const MAX_ATTACHED_BYTES = 1024 * 1024;
const MIME_TYPES: Record<string, string> = { '.json': 'application/json', '.md': 'text/markdown', '.html': 'text/html', '.csv': 'text/csv', '.pdf': 'application/pdf' };
const MENTION = /(?:^|\s)@(\S+)/g;

export interface Attachment {
  name: string;
  mimeType: string;
  data: string;
}

/**
 * `@path` in a prompt: each names a file under the chat's directory, attached to the turn (the
 * turn's `files`) under its file name. A mention that names no such file is
 * left as text and said so.
 */
export function mentionedFiles(input: string, cwd: string): { files: Attachment[]; notes: string[] } {
  const files: Attachment[] = [];
  const attached = new Set<string>();
  const notes: string[] = [];
  for (const [, mentioned] of input.matchAll(MENTION)) {
    const path = mentioned.replace(/[.,;:!?)]+$/, '');
    const file = fileUnder(cwd, path);
    if (typeof file === 'string') {
      notes.push(`@${path}: ${file}; sent as text`);
      continue;
    }
    if (attached.has(file.path)) continue;
    attached.add(file.path);
    // the server takes a plain file name; the prompt itself says where the file is
    files.push({ name: basename(path), mimeType: MIME_TYPES[extname(path).toLowerCase()] ?? 'text/plain', data: readFileSync(file.path).toString('base64') });
    notes.push(`attached ${path} (${file.size} bytes)`);
  }
  return { files, notes };
}

/** The file at `path` under `cwd`, or why it cannot be attached. */
function fileUnder(cwd: string, path: string): { path: string; size: number } | string {
  let real: string;
  try {
    real = realpathSync(resolve(cwd, path));
  } catch {
    return 'no such file';
  }
  const inside = relative(realpathSync(cwd), real);
  if (inside.startsWith('..') || inside.startsWith(sep)) return 'outside the chat\'s directory';
  const stat = statSync(real);
  if (!stat.isFile()) return 'not a file';
  if (stat.size > MAX_ATTACHED_BYTES) return `larger than ${MAX_ATTACHED_BYTES} bytes`;
  return { path: real, size: stat.size };
}

/** Tab after `@pre`: the entries of that directory starting so (directories end in `/`). */
export function completeMention(line: string, cwd: string): [string[], string] | null {
  const word = /(?:^|\s)(@\S*)$/.exec(line)?.[1];
  if (word === undefined) return null;
  const typed = word.slice(1);
  const directory = typed.endsWith('/') ? typed : dirname(typed) === '.' && !typed.startsWith('./') ? '' : `${dirname(typed)}/`;
  let entries: string[];
  try {
    entries = readdirSync(join(cwd, directory), { withFileTypes: true })
      .filter((entry) => !entry.name.startsWith('.') || typed.slice(directory.length).startsWith('.'))
      .map((entry) => `@${directory}${entry.name}${entry.isDirectory() ? '/' : ''}`);
  } catch {
    return [[], word];
  }
  return [entries.filter((entry) => entry.startsWith(word)).sort(), word];
}
