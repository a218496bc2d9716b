// The directory tree the no-follow edge files attack: one per test, under a root removed after the file.
import { after } from 'node:test';
import { closeSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A scratch root for one test file, removed after it; `world(name)` makes a fresh tree in it. */
export function noFollowWorlds(prefix: string) {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  after(() => rmSync(root, { recursive: true, force: true }));
  return {
    root,
    /** inside/real/file.txt, outside/file.txt (the secret), and symlinks between them */
    world(name: string) {
      const base = path.join(root, name);
      mkdirSync(path.join(base, 'inside', 'real'), { recursive: true });
      mkdirSync(path.join(base, 'outside'));
      writeFileSync(path.join(base, 'inside', 'real', 'file.txt'), 'workspace');
      writeFileSync(path.join(base, 'outside', 'file.txt'), 'secret');
      symlinkSync(path.join(base, 'outside'), path.join(base, 'inside', 'link-out'));
      symlinkSync(path.join(base, 'inside', 'real'), path.join(base, 'inside', 'link-in'));
      symlinkSync(path.join(base, 'outside', 'file.txt'), path.join(base, 'inside', 'real', 'file-link.txt'));
      return { base, inside: path.join(base, 'inside') };
    },
  };
}

/** Reads a descriptor's whole text and closes it. */
export function readAndClose(fd: number): string {
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}
