/**
 * Where the server's own files really are, for masking. Resolved at each command, not once at
 * start-up: the state dir may be created after the probe, and a models file may appear later.
 */
import { realpathSync, statSync } from 'node:fs';
import type { HiddenPath } from './bubblewrap.ts';

/** The existing paths among `paths`, canonical (a mask must sit where the file really is). */
export function hiddenPaths(paths: readonly (string | null)[]): HiddenPath[] {
  const hidden = new Map<string, HiddenPath>();
  for (const path of paths) {
    if (path === null) continue;
    try {
      const canonical = realpathSync(path);
      hidden.set(canonical, { path: canonical, directory: statSync(canonical).isDirectory() });
    } catch {
      // absent (e.g. the default models file): nothing to hide
    }
  }
  const all = [...hidden.values()];
  // A file inside a hidden directory is already covered by the directory's mask.
  return all.filter((entry) => !all.some((other) => other.directory && other !== entry && entry.path.startsWith(`${other.path}/`)));
}
