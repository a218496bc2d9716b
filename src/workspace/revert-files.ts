/**
 * Writes a turn's before-versions back (CONTRACT.md §20), all or nothing as far as a file system
 * allows: every file is first checked to still be the turn's after-version (else the conflicting
 * paths come back and nothing is touched), then each before-version is written aside in its own
 * directory and, once all are written, renamed over its name; files the turn created are removed.
 * A crash before the renames leaves only `.agentd-revert-*` files beside the originals.
 *
 * Race-free: every directory from the session directory down is opened without following a
 * symlink (O_PATH | O_NOFOLLOW | O_DIRECTORY, then names resolved from that descriptor through
 * /proc/self/fd), so a symlink swapped in for a directory makes its paths conflict instead of
 * leading the writes elsewhere.
 *
 * `revertFiles` is self-contained on purpose: on the host it runs in this process, in a sandbox
 * its source is run by the guest's node through the executor (exec/sandbox-revert.ts), so it
 * reaches its modules through process.getBuiltinModule and nothing else from its surroundings.
 */

export interface RevertFilesInput {
  /** the session directory: a host path, or a guest path in the sandbox */
  root: string;
  entries: { path: string; before: { type: 'f' | 'l'; mode: number; hash: string } | null; after: { type: 'f' | 'l'; mode: number; hash: string } | null }[];
  /** before-bytes by hash, base64 */
  contents: Record<string, string>;
}

export type RevertFilesOutcome = { ok: true; reverted: string[] } | { ok: false; conflicts: string[] };

export function revertFiles(input: RevertFilesInput): RevertFilesOutcome {
  const fs = process.getBuiltinModule('node:fs');
  const crypto = process.getBuiltinModule('node:crypto');
  const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = fs.constants;
  const O_PATH = 0o10000000;
  const at = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`;
  const parentOf = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');
  const nameOf = (path: string) => path.slice(path.lastIndexOf('/') + 1);
  const sha = (bytes: Buffer) => crypto.createHash('sha256').update(bytes).digest('hex');
  const BAD = -2;
  const MISSING = -1;
  const opened: number[] = [];
  const directories = new Map<string, number>();

  const everything: RevertFilesOutcome = { ok: false, conflicts: input.entries.map((entry) => entry.path) };
  let rootFd: number;
  try {
    rootFd = fs.openSync(input.root, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  } catch {
    return everything; // the session directory is gone, or a symlink now: every file has changed since
  }
  opened.push(rootFd);
  try {
    // An earlier component swapped for a symlink makes the root another directory: refuse it all.
    if (fs.readlinkSync(`/proc/self/fd/${rootFd}`) !== input.root) return everything;
    directories.set('', rootFd);

    const directory = (relative: string, create: boolean): number => {
      const known = directories.get(relative);
      if (known !== undefined && !(known === MISSING && create)) return known;
      const parent = directory(parentOf(relative), create);
      if (parent < 0) return parent;
      const name = nameOf(relative);
      let fd: number;
      try {
        fd = fs.openSync(at(parent, name), O_PATH | O_DIRECTORY | O_NOFOLLOW);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') fd = BAD; // a symlink or a file where a directory was
        else if (!create) fd = MISSING;
        else {
          fs.mkdirSync(at(parent, name), 0o755);
          fd = fs.openSync(at(parent, name), O_PATH | O_DIRECTORY | O_NOFOLLOW);
        }
      }
      if (fd >= 0) opened.push(fd);
      directories.set(relative, fd);
      return fd;
    };

    type Version = { type: 'f' | 'l'; mode: number; hash: string } | null | 'other';
    const current = (path: string): Version => {
      const parent = directory(parentOf(path), false);
      if (parent === MISSING) return null;
      if (parent === BAD) return 'other';
      const name = at(parent, nameOf(path));
      let stats;
      try {
        stats = fs.lstatSync(name);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        return 'other';
      }
      if (stats.isSymbolicLink()) return { type: 'l', mode: stats.mode & 0o7777, hash: sha(fs.readlinkSync(name, { encoding: 'buffer' })) };
      if (!stats.isFile()) return 'other';
      const fd = fs.openSync(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
      try {
        const info = fs.fstatSync(fd);
        return { type: 'f', mode: info.mode & 0o7777, hash: sha(fs.readFileSync(fd)) };
      } finally {
        fs.closeSync(fd);
      }
    };

    const conflicts = input.entries
      .filter((entry) => {
        const now = current(entry.path);
        if (now === null || entry.after === null) return now !== entry.after;
        return now === 'other' || now.type !== entry.after.type || now.mode !== entry.after.mode || now.hash !== entry.after.hash;
      })
      .map((entry) => entry.path);
    if (conflicts.length > 0) return { ok: false, conflicts };

    // Write aside: every before-version beside its name, nothing renamed yet.
    const staged: { parent: number; temporary: string; name: string }[] = [];
    try {
      for (const entry of input.entries) {
        if (entry.before === null) continue;
        const parent = directory(parentOf(entry.path), true);
        if (parent < 0) throw new Error(`${entry.path}: its directory is not a directory`);
        const temporary = `.agentd-revert-${crypto.randomBytes(8).toString('hex')}`;
        const bytes = Buffer.from(input.contents[entry.before.hash] ?? '', 'base64');
        if (sha(bytes) !== entry.before.hash) throw new Error(`${entry.path}: the kept content does not match its hash`);
        if (entry.before.type === 'l') fs.symlinkSync(bytes, at(parent, temporary));
        else {
          const fd = fs.openSync(at(parent, temporary), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
          try {
            fs.writeSync(fd, bytes);
            // set-user-ID and set-group-ID are not given back: the writer is not necessarily the file's owner
            fs.fchmodSync(fd, entry.before.mode & 0o1777);
            fs.fsyncSync(fd);
          } finally {
            fs.closeSync(fd);
          }
        }
        staged.push({ parent, temporary, name: nameOf(entry.path) });
      }
    } catch (error) {
      for (const file of staged) fs.rmSync(at(file.parent, file.temporary), { force: true });
      throw error;
    }

    // Then rename: the files the turn created go, the earlier versions take their names.
    for (const entry of input.entries) {
      if (entry.before !== null || entry.after === null) continue;
      fs.unlinkSync(at(directory(parentOf(entry.path), false), nameOf(entry.path)));
    }
    for (const file of staged) fs.renameSync(at(file.parent, file.temporary), at(file.parent, file.name));
    for (const fd of new Set(staged.map((file) => file.parent))) {
      try {
        const readable = fs.openSync(at(fd, '.'), O_RDONLY | O_DIRECTORY);
        fs.fsyncSync(readable);
        fs.closeSync(readable);
      } catch {
        // durability of the renames is best effort where the directory cannot be opened for reading
      }
    }
    return { ok: true, reverted: input.entries.map((entry) => entry.path) };
  } finally {
    for (const fd of opened) fs.closeSync(fd);
  }
}
