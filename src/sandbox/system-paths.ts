/**
 * The parts of the host a confined command sees besides the workspace, in both the host's
 * read-only view and the tenant sandbox: the system directories programs and libraries live in,
 * and one curated /etc. The /etc list names what ordinary tools need (user and host names, the dynamic linker, locales, time zones, certificates, shell
 * start-up files, git's system config) and leaves out everything else by default: shadow,
 * gshadow, sudoers, ssh host keys, /etc/ssl/private, Kerberos keytabs, /etc/environment and
 * application configs that may hold credentials.
 */
import { lstatSync, readlinkSync } from 'node:fs';

const SYSTEM_DIRECTORIES = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'] as const;

const ETC_ENTRIES = [
  'passwd', 'group', 'nsswitch.conf', 'hosts', 'hostname', 'host.conf', 'resolv.conf', 'gai.conf',
  'services', 'protocols',
  'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'alternatives',
  'localtime', 'timezone', 'locale.alias', 'locale.conf',
  'os-release', 'debian_version', 'lsb-release',
  'profile', 'profile.d', 'bash.bashrc', 'inputrc', 'shells', 'terminfo',
  'gitconfig', 'mime.types', 'magic', 'magic.mime', 'manpath.config',
  'ssl/certs', 'ssl/openssl.cnf', 'ca-certificates', 'ca-certificates.conf', 'pki/tls/certs',
].map((entry) => `/etc/${entry}`);

/** The host's own accounts, names and resolver: the tenant view shows generated ones instead (or none). */
export const HOST_IDENTITY_ETC_ENTRIES: readonly string[] = ['passwd', 'group', 'hosts', 'hostname', 'resolv.conf'].map((entry) => `/etc/${entry}`);

/** A host path shown in the confined view: bound read-only, or recreated as the same symlink. */
export interface SystemEntry {
  path: string;
  /** the link's target when the host path is a symlink (/bin -> usr/bin on a merged-/usr system) */
  symlink: string | null;
}

/** The system entries that exist on this host, in mount order. Read once at start-up. */
export function inspectSystemEntries(candidates: readonly string[] = [...SYSTEM_DIRECTORIES, ...ETC_ENTRIES]): SystemEntry[] {
  const entries: SystemEntry[] = [];
  for (const path of candidates) {
    try {
      const stat = lstatSync(path);
      entries.push({ path, symlink: stat.isSymbolicLink() ? readlinkSync(path) : null });
    } catch {
      // absent on this distribution
    }
  }
  return entries;
}
