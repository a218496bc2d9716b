/**
 * Who the guest is: its user, its environment and the /etc files that describe it. The rest of
 * /etc is the curated host list of system-paths.ts; the host's accounts, names and resolver are
 * never shown, passwd, group, hosts and resolv.conf are written fresh for the guest.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GUEST_HOME } from '../guest-mounts.ts';

export const GUEST_UID = 1000;
export const GUEST_GID = 1000;
const GUEST_USER = 'agent';

/** The guest's whole environment: nothing is inherited from the runner or the server. */
export const GUEST_ENVIRONMENT: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: GUEST_HOME,
  USER: GUEST_USER,
  LOGNAME: GUEST_USER,
  SHELL: '/bin/sh',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
  TMPDIR: '/tmp',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  GIT_TERMINAL_PROMPT: '0',
});

export const GENERATED_ETC_FILES = ['passwd', 'group', 'hosts', 'resolv.conf'] as const;

const ETC_PREFIX = 'agentd-sandbox-etc-';
/** The owning runner's pid, kept in a file rather than the name: the guest's mountinfo shows the name. */
const RUNNER_PID_FILE = 'runner.pid';

/** A runner killed outright leaves its directory behind; the next one removes it. */
function removeFilesOfDeadRunners(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(ETC_PREFIX)) continue;
    const directory = join(tmpdir(), name);
    let runnerPid: string | undefined;
    try {
      runnerPid = readFileSync(join(directory, RUNNER_PID_FILE), 'utf8').trim();
    } catch {
      runnerPid = /^(\d+)-/.exec(name.slice(ETC_PREFIX.length))?.[1]; // named by an earlier version; else not (yet) claimed
    }
    if (runnerPid === undefined) continue;
    if (/^\d+$/.test(runnerPid) && !existsSync(`/proc/${runnerPid}`)) rmSync(directory, { recursive: true, force: true });
  }
}

/** Writes the generated files into a private directory; `remove` deletes it at shutdown. `ids`: the guest's uid and gid inside (1000 but under gVisor, runtimes/oci-spec.ts). */
export function writeGuestEtc(home: string, ids = { uid: GUEST_UID, gid: GUEST_GID }): { directory: string; remove(): void } {
  removeFilesOfDeadRunners();
  const directory = mkdtempSync(join(tmpdir(), ETC_PREFIX));
  writeFileSync(join(directory, RUNNER_PID_FILE), `${process.pid}\n`, { mode: 0o600 });
  const files: Record<(typeof GENERATED_ETC_FILES)[number], string> = {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\n${GUEST_USER}:x:${ids.uid}:${ids.gid}:agent:${home}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\n${GUEST_USER}:x:${ids.gid}:\nnogroup:x:65534:\n`,
    hosts: '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n',
    // slirp4netns's DNS forwarder: the one private address the network filter lets through (port 53)
    'resolv.conf': 'nameserver 10.0.2.3\n',
  };
  for (const [name, content] of Object.entries(files)) writeFileSync(join(directory, name), content, { mode: 0o644 });
  return { directory, remove: () => rmSync(directory, { recursive: true, force: true }) };
}
