/** The host inotify watches a process holds, as the kernel lists them in /proc/<pid>/fdinfo. */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export function inotifyWatchCount(pid = process.pid): number {
  let count = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile
    }
    if (target !== 'anon_inode:inotify') continue;
    count += readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8').split('\n').filter((line) => line.startsWith('inotify wd:')).length;
  }
  return count;
}
