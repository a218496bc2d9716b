/**
 * Paths in the sandbox's terms. The model sees guest paths (`/workspace/...`) only; the boundary's
 * host workspace maps to GUEST_WORKSPACE. Containment of a guest path is lexical: inside the
 * sandbox nothing but the workspace is writable and no host path exists, so a symlink can lead
 * nowhere the guest could not already reach with a shell command.
 */
import path from 'node:path';
import type { PathClassification } from '../workspace/paths.ts';
import { isInside } from '../workspace/paths.ts';
import { GUEST_HOME, GUEST_WORKSPACE } from './guest-mounts.ts';

/** The guest path of a host path inside the sandbox's workspace, or null when it lies outside. */
export function guestPathOf(hostWorkspace: string, hostPath: string): string | null {
  if (!isInside(hostPath, hostWorkspace)) return null;
  const relative = path.relative(hostWorkspace, hostPath);
  return relative === '' ? GUEST_WORKSPACE : path.posix.join(GUEST_WORKSPACE, ...relative.split(path.sep));
}

/**
 * Resolves `requested` against the guest `cwd` and says whether it lies in the cwd, elsewhere in
 * the guest roots, or outside (refused: the sandbox shows nothing else the tools may touch).
 */
export function classifyGuestPath(roots: readonly string[], requested: string, cwd: string): PathClassification {
  const expanded = requested === '~' || requested.startsWith('~/') ? GUEST_HOME + requested.slice(1) : requested;
  const resolved = path.posix.resolve(cwd, expanded);
  const root = roots.find((candidate) => isInside(resolved, candidate)) ?? null;
  const location = root === null ? 'outside' : isInside(resolved, cwd) ? 'cwd' : 'root';
  // Whether it exists is the sandbox's to say; nothing on the host is looked at.
  return { requested, resolved, location, root, exists: false };
}
