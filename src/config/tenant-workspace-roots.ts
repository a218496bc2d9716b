/**
 * The rules for tenants' workspace roots (CONTRACT.md §11): each names an existing directory by its
 * one canonical absolute path, and no root may contain another tenant's root, server state or a
 * credential — nor lie inside one of those.
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { isInside } from '../workspace/paths.ts';

/** Something a workspace root must stay clear of, with how messages name it. */
export interface ProtectedPath {
  name: string;
  /** canonical absolute path */
  path: string;
  /** a directory can overlap a root both ways; a file can only lie inside one */
  kind: 'directory' | 'file';
}

export interface NamedRoot {
  field: string;
  root: string;
}

/** Returns `[field, problem]` for the first violation, or null when every root is acceptable. */
export function firstRootViolation(roots: readonly NamedRoot[], protectedPaths: readonly ProtectedPath[]): [string, string] | null {
  for (const { field, root } of roots) {
    const problem = rootShapeProblem(root);
    if (problem) return [field, problem];
  }
  for (const [index, { field, root }] of roots.entries()) {
    const earlier = roots.slice(0, index).find((other) => isInside(root, other.root) || isInside(other.root, root));
    if (earlier) return [field, `${root} overlaps ${earlier.field} (${earlier.root})`];
    for (const guarded of protectedPaths) {
      if (isInside(guarded.path, root)) return [field, `${root} contains ${guarded.name} (${guarded.path})`];
      if (guarded.kind === 'directory' && isInside(root, guarded.path)) return [field, `${root} lies inside ${guarded.name} (${guarded.path})`];
    }
  }
  return null;
}

function rootShapeProblem(root: string): string | null {
  if (!path.isAbsolute(root)) return `${root} must be an absolute path`;
  if (root.split('/').some((component) => component === '.' || component === '..')) return `${root} must not contain . or .. components`;
  if (root === '/') return 'the filesystem root cannot be a workspace root';
  let stats;
  try {
    stats = statSync(root);
  } catch {
    return `${root} does not exist`;
  }
  if (!stats.isDirectory()) return `${root} is not a directory`;
  const canonical = realpathSync.native(root);
  if (canonical !== root) return `${root} is not canonical (it resolves to ${canonical})`;
  return null;
}

/** The canonical form of a path that may not exist yet: its nearest existing ancestor resolved, the rest appended. */
export function canonicalPath(target: string): string {
  const missing: string[] = [];
  let existing = path.resolve(target);
  for (;;) {
    try {
      return path.join(realpathSync.native(existing), ...missing.reverse());
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) return path.resolve(target);
      missing.push(path.basename(existing));
      existing = parent;
    }
  }
}
