/**
 * Where this host keeps the cgroup controllers the sandbox needs, and under which directory the
 * runner may create its tenant group: cgroup v2 (one unified tree, usual on production hosts) or
 * v1 (one tree per controller, as on this machine). The runner's own cgroup is the parent, so a
 * delegated subtree (systemd `Delegate=yes`, a container's namespace) is respected.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The controllers that carry a guarantee; cpuacct only measures, so it is optional. */
const REQUIRED_V1_CONTROLLERS = ['memory', 'cpu', 'pids'] as const;
const REQUIRED_V2_CONTROLLERS = ['memory', 'cpu', 'pids'] as const;

type V1Controller = (typeof REQUIRED_V1_CONTROLLERS)[number] | 'cpuacct';

export type CgroupLayout =
  | { version: 2; parent: string }
  | { version: 1; parents: Partial<Record<V1Controller, string>> & Record<(typeof REQUIRED_V1_CONTROLLERS)[number], string> };

export type LayoutResult = { ok: true; layout: CgroupLayout } | { ok: false; missing: string; message: string };

/** `/proc/self/cgroup` lines: `hierarchy-id:controller,list:/path` (v2: `0::/path`). */
function ownPaths(selfCgroup: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of selfCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    const controllers = match[1] === '' ? [''] : match[1].split(',');
    for (const controller of controllers) paths.set(controller, match[2]);
  }
  return paths;
}

/** The runner's own group below `mount` when it is visible there, else the mount's root. */
function ownGroup(mount: string, ownPath: string | undefined): string {
  const candidate = ownPath ? join(mount, ownPath) : mount;
  return existsSync(candidate) ? candidate : mount;
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

export function detectCgroupLayout(root: string, selfCgroup = readOrEmpty('/proc/self/cgroup')): LayoutResult {
  const own = ownPaths(selfCgroup);
  if (existsSync(join(root, 'cgroup.controllers'))) {
    const parent = ownGroup(root, own.get(''));
    const available = readOrEmpty(join(parent, 'cgroup.controllers')).trim().split(/\s+/);
    for (const controller of REQUIRED_V2_CONTROLLERS) {
      if (!available.includes(controller)) {
        return { ok: false, missing: `cgroup:${controller}`, message: `cgroup v2 controller "${controller}" is not available in ${parent}` };
      }
    }
    return { ok: true, layout: { version: 2, parent } };
  }
  const parents: Partial<Record<V1Controller, string>> = {};
  for (const controller of [...REQUIRED_V1_CONTROLLERS, 'cpuacct'] as V1Controller[]) {
    const names = controller === 'cpu' || controller === 'cpuacct' ? [controller, 'cpu,cpuacct'] : [controller];
    const mount = names.map((name) => join(root, name)).find((path) => existsSync(join(path, 'cgroup.procs')));
    if (!mount) continue;
    parents[controller] = ownGroup(mount, own.get(controller));
  }
  for (const controller of REQUIRED_V1_CONTROLLERS) {
    if (!parents[controller]) {
      return { ok: false, missing: `cgroup:${controller}`, message: `no cgroup "${controller}" controller under ${root} (neither v2 nor a v1 hierarchy)` };
    }
  }
  return { ok: true, layout: { version: 1, parents: parents as Extract<CgroupLayout, { version: 1 }>['parents'] } };
}
