/**
 * Path canonicalisation and containment for workspace roots, session directories and every path a
 * tool touches. Paths are resolved component by component the way the kernel would follow them
 * (symlinks first, then `..`), so a symlink can never lead a path out of a root unnoticed, and a
 * path that does not exist yet resolves through its nearest existing ancestor. Containment compares
 * whole path segments: `/a/bc` is not inside `/a/b`.
 */
import { lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

/** Where a resolved path lies: inside the session cwd, inside another allowed root, or nowhere allowed. */
type PathLocation = 'cwd' | 'root' | 'outside';

export interface PathClassification {
  /** the path as it was asked for */
  requested: string;
  /** absolute, symlink-free path; tools must operate on this one, never on `requested` */
  resolved: string;
  location: PathLocation;
  /** the allowed root that contains `resolved`, or null when outside every root */
  root: string | null;
  /** whether `resolved` exists right now */
  exists: boolean;
}

export class PathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PathError';
  }
}

/** Linux gives up after 40 symlinks in one lookup; so do we. */
const MAX_SYMLINK_HOPS = 40;

/**
 * Resolves `requested` (relative to `base`, the session cwd) with every symlink followed, and tells
 * whether it lies inside `base`, inside another of `roots`, or outside all of them.
 */
export function canonicalizeInside(roots: readonly string[], requested: string, base: string): PathClassification {
  const canonicalBase = resolveReal(joinUnnormalized(process.cwd(), base));
  const resolved = resolveReal(joinUnnormalized(canonicalBase, expandHome(requested)));
  const canonicalRoots = roots.map((candidate) => resolveReal(joinUnnormalized(process.cwd(), candidate)));
  const root = canonicalRoots.find((candidate) => isInside(resolved, candidate)) ?? null;
  return { requested, resolved, location: locate(resolved, canonicalBase, root), root, exists: pathExists(resolved) };
}

/** Fails closed: a base that is not inside any root makes nothing count as 'cwd'. */
function locate(resolved: string, base: string, root: string | null): PathLocation {
  if (root === null) return 'outside';
  return isInside(resolved, base) ? 'cwd' : 'root';
}

/**
 * Canonicalises a workspace root at start-up: it must be an existing directory and not `/` itself
 * (a root of `/` would make containment meaningless).
 */
export function canonicalizeRoot(root: string): string {
  if (!path.isAbsolute(root)) throw new PathError(`workspace root must be an absolute path: ${root}`);
  let canonical: string;
  try {
    canonical = realpathSync.native(root);
  } catch {
    throw new PathError(`workspace root does not exist: ${root}`);
  }
  if (!statSync(canonical).isDirectory()) throw new PathError(`workspace root is not a directory: ${root}`);
  if (canonical === path.parse(canonical).root) throw new PathError('the filesystem root cannot be a workspace root');
  return canonical;
}

/** Segment-wise containment: true when `child` is `parent` itself or lies below it. */
export function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child); // '' for the parent itself
  return relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/**
 * Walks an absolute path one component at a time, following symlinks as the kernel does and applying
 * `..` to the already-resolved prefix. A name that does not exist is appended as it is; every name is
 * looked up, so a `..` back out of a missing name leads to a directory whose symlinks are followed
 * again (`missing/../link` follows `link`).
 */
function resolveReal(absolute: string): string {
  let current = path.parse(absolute).root;
  const pending = splitComponents(absolute);
  let hops = 0;
  while (pending.length > 0) {
    const component = pending.shift() as string;
    // Stryker disable next-line ConditionalExpression, StringLiteral, BlockStatement: without this step `..` is joined and looked up like a name, and path.join of the resolved, symlink-free prefix and `..` is its parent, no symlink: the same result (the `true` twin, killed, shares the line)
    if (component === '..') {
      current = path.dirname(current);
      continue;
    }
    const candidate = path.join(current, component);
    if (isSymlink(candidate)) {
      if (++hops > MAX_SYMLINK_HOPS) throw new PathError(`too many levels of symbolic links: ${absolute}`);
      const target = readlinkSync(candidate);
      if (path.isAbsolute(target)) current = path.parse(target).root;
      pending.unshift(...splitComponents(target));
    } else {
      current = candidate;
    }
  }
  return current;
}

/** Unlike path.resolve, keeps `..` so that it is applied after the symlinks before it are followed. */
function joinUnnormalized(base: string, requested: string): string {
  return path.isAbsolute(requested) ? requested : `${base}${path.sep}${requested}`;
}

/** The names of a path, without the empty and `.` ones, which name the directory they are in. */
function splitComponents(value: string): string[] {
  // Stryker disable next-line ConditionalExpression, LogicalOperator, StringLiteral, MethodExpression: an empty or `.` component kept is joined to the resolved prefix as the prefix itself, no symlink, so skipping it here only reads as the kernel's rule (the filter-everything `false` twin, killed, shares the line)
  return value.split(/[\\/]/).filter((component) => component !== '' && component !== '.');
}

/** False for a name that does not exist (or cannot be looked up): it is appended as it is. */
export function isSymlink(candidate: string): boolean {
  try {
    return lstatSync(candidate).isSymbolicLink();
  }
  // Stryker disable next-line BlockStatement: an emptied catch returns undefined, which every caller reads as false
  catch {
    return false;
  }
}

/** Whether the path names a directory, following symlinks; false when it does not exist. */
export function isDirectory(candidate: string): boolean {
  try {
    return statSync(candidate).isDirectory();
  } catch {
    return false;
  }
}

function pathExists(candidate: string): boolean {
  try {
    lstatSync(candidate);
    return true;
  } catch {
    return false;
  }
}

/** Models often write `~/x`; it means the server user's home, which the containment check then judges. */
function expandHome(requested: string): string {
  const home = process.env.HOME;
  if (!home) return requested;
  if (requested === '~') return home;
  if (requested.startsWith('~/')) return path.join(home, requested.slice(2));
  return requested;
}
