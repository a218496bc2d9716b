/**
 * Revert content counted against a tenant's disk quota (CONTRACT.md §21): the bytes live in the
 * tenant's database, so the same number of bytes is held on the tenant's quota'd file system
 * (tenancy/tenant-disk.ts) by one server-owned file at its top, beside the `workspace` and `home`
 * the guest sees and out of its view. The file is written (zeros, really allocated: ext4 keeps no
 * holes for written blocks) or cut to the size kept, so what the guest may still write shrinks and
 * grows with it; and the bytes revert content may take are what the file holds plus what the file
 * system has free.
 */
import { open, stat, statfs, truncate } from 'node:fs/promises';
import path from 'node:path';

const CHUNK = Buffer.alloc(1024 * 1024);

export interface RevertSpace {
  /** the bytes revert content may take now: what is held for it plus what the file system has free */
  room(): Promise<number>;
  /** holds exactly `bytes` on the file system for revert content (taking or giving back space) */
  hold(bytes: number): Promise<void>;
}

export class DiskReservation implements RevertSpace {
  constructor(private readonly file: string) {}

  async room(): Promise<number> {
    const free = await statfs(path.dirname(this.file));
    return free.bavail * free.bsize + (await this.held());
  }

  async hold(bytes: number): Promise<void> {
    const held = await this.held();
    if (bytes <= held) {
      if (bytes < held) await truncate(this.file, bytes);
      return;
    }
    const handle = await open(this.file, 'a', 0o600);
    try {
      for (let written = held; written < bytes; ) {
        const length = Math.min(CHUNK.length, bytes - written);
        await handle.write(CHUNK, 0, length);
        written += length;
      }
      await handle.sync();
    } catch (error) {
      await handle.truncate(held).catch(() => {});
      throw error;
    } finally {
      await handle.close();
    }
  }

  private async held(): Promise<number> {
    try {
      return (await stat(this.file)).size;
    } catch {
      return 0;
    }
  }
}
