/**
 * The argv of every git command the server runs on a tenant's behalf: `env -i` first, so git gets
 * an environment of the server's choosing and nothing else (no HOME, so no ~/.gitconfig,
 * ~/.git-credentials or ~/.netrc; no SSH_AUTH_SOCK; no GIT_* variable pointing elsewhere), no
 * system or global configuration, and settings that no repository configuration can undo: no
 * hooks, no fsmonitor, no submodules, no credential helper, and only the protocols the source needs.
 * ssh is told to use no key, agent, password or configuration file; a server that wants a
 * credential is refused.
 */

/** A HOME that does not exist: curl's .netrc and git's global files are looked up under it and not found. */
const GIT_HOME = '/nonexistent/agentd-git';

/** Each passed as `-c` (and so, through GIT_CONFIG_PARAMETERS, to the upload-pack of a local source too). */
const HARDENING = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'submodule.recurse=false',
  'credential.helper=',
  'core.askPass=',
  'http.followRedirects=false',
  'protocol.allow=never',
];

const SSH_WITHOUT_CREDENTIALS = [
  'ssh', '-F', '/dev/null',
  '-o', 'BatchMode=yes', '-o', 'IdentityAgent=none', '-o', 'IdentitiesOnly=yes', '-o', 'PubkeyAuthentication=no',
  '-o', 'PasswordAuthentication=no', '-o', 'KbdInteractiveAuthentication=no', '-o', 'GSSAPIAuthentication=no',
  '-o', 'HostbasedAuthentication=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'ProxyCommand=none',
];

export interface GitInvocation {
  args: readonly string[];
  /** the program search path (the sandbox's, or the server's own) */
  searchPath: string;
  /** the one transport the source uses: `file` for a local repository, else the network ones */
  protocols: 'file' | 'network';
  /** more `-c name=value` settings (the pinned destination's) */
  config?: readonly string[];
  /** more ssh options (the pinned destination's host key alias) */
  sshOptions?: readonly string[];
  /** GIT_CEILING_DIRECTORIES: where git's search for a repository stops */
  ceiling?: string;
}

export function gitArgv(invocation: GitInvocation): string[] {
  const environment = [
    `PATH=${invocation.searchPath}`,
    `HOME=${GIT_HOME}`,
    'LC_ALL=C',
    'GIT_CONFIG_NOSYSTEM=1',
    'GIT_CONFIG_GLOBAL=/dev/null',
    'GIT_TERMINAL_PROMPT=0',
    `GIT_ALLOW_PROTOCOL=${invocation.protocols === 'file' ? 'file' : 'https:http:ssh:git'}`,
    `GIT_SSH_COMMAND=${[...SSH_WITHOUT_CREDENTIALS, ...(invocation.sshOptions ?? [])].join(' ')}`,
    ...(invocation.ceiling === undefined ? [] : [`GIT_CEILING_DIRECTORIES=${invocation.ceiling}`]),
  ];
  const config = [...HARDENING, ...(invocation.config ?? [])].flatMap((setting) => ['-c', setting]);
  return ['env', '-i', ...environment, 'git', ...config, ...invocation.args];
}
