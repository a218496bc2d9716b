/** A turn's change receipt (CONTRACT.md §20): the files its tools created, modified or deleted. */

type FileChangeKind = 'created' | 'modified' | 'deleted';

export interface FileChange {
  /** relative to the session cwd, `/`-separated */
  path: string;
  kind: FileChangeKind;
  /** the size after the turn; 0 for a deleted file */
  bytes: number;
}

export interface FileChanges {
  changes: FileChange[];
  /** more files changed than MAX_FILE_CHANGES (or than the watch could see); the list is cut */
  changesTruncated: boolean;
}

export const MAX_FILE_CHANGES = 1000;

export const NO_FILE_CHANGES: FileChanges = Object.freeze({ changes: [], changesTruncated: false }) as FileChanges;
