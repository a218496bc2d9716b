/**
 * What reverting a turn takes (CONTRACT.md §20): for each file of its receipt the version before
 * the turn (null: the turn created it) and after it (null: the turn deleted it), each a regular
 * file or a symlink with its mode and the sha256 of its bytes (a symlink's target). A revert
 * writes the before-versions back only where every file still is its after-version.
 */

export interface FileVersion {
  type: 'f' | 'l';
  /** permission bits (0o7777) */
  mode: number;
  hash: string;
}

export interface RevertEntry {
  /** relative to the session cwd, `/`-separated */
  path: string;
  before: FileVersion | null;
  after: FileVersion | null;
}

/** A turn's revert as kept: its entries and the before-bytes they need, or why it cannot be reverted. */
export type TurnRevertPlan =
  | { available: true; entries: RevertEntry[]; contents: Map<string, Buffer> }
  | { available: false; reason: string };

/** The before-bytes one turn may keep; a turn that changed more cannot be reverted. */
export const MAX_REVERT_BYTES_PER_TURN = 16 * 1024 * 1024;
/** --revert-history's default: the latest turns of a session whose before-bytes are kept. */
const DEFAULT_REVERT_HISTORY = 50;
