/**
 * Server-owned repository checkouts (CONTRACT.md §4). A checkout lives at
 * `<first workspace root>/.agentd-checkouts/<sessionId>`, inside the first root so the session cwd
 * is an allowed path. git writes into `<sessionId>.partial` first, and the directory is renamed
 * into place only when every step succeeded: the final directory exists if and only if the
 * checkout completed, which is what a restarted server checks.
 *
 * git runs as a real child process, argv only (no shell), with prompts disabled, a deadline, and
 * in its own process group so that an abort or the deadline also stops git's helpers.
 */
import { spawn } from 'node:child_process';
import { fstatSync, lstatSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ApiError } from '../domain/errors.ts';
import { inspectLocalRepository, LocalRepositoryRefused } from './local-repository.ts';
import { closeDirectory, entryPath, makeDirectories, openChildDirectory, openDirectoryExact, openParentIfPresent, type OpenDirectory } from './no-follow.ts';

export const CHECKOUTS_DIRECTORY = '.agentd-checkouts';
export const DEFAULT_CHECKOUT_TIMEOUT_MS = 10 * 60_000;

/** What git is asked to fetch: `source` is the URL handed to git (a local path becomes file://). */
export interface RepositorySource {
  source: string;
  ref: string | null;
  /** for a local repository: the roots it was checked against, to check it again before cloning */
  localRoots?: readonly string[];
}

/**
 * Where the session's checkout goes; creates the parent. A parent that is a symlink could lead the
 * checkout out of the root, so it is created or opened without following one.
 */
export function checkoutDirectory(workspaceRoots: readonly string[], sessionId: string): string {
  const parent = path.join(workspaceRoots[0], CHECKOUTS_DIRECTORY);
  closeDirectory(makeDirectories(workspaceRoots[0], parent));
  return path.join(parent, sessionId);
}

// ---------------------------------------------------------------- what is accepted

const NETWORK_SCHEMES = new Set(['https', 'http', 'ssh', 'git']);
const UNSAFE_CHARACTERS = /[\s\u0000-\u001f\u007f-\u009f]/u;
const SCP_LIKE = /^(?:([A-Za-z0-9._-]+)@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(.+)$/;
const COMMIT_ID = /^[0-9a-f]{7,64}$/i;

const refuse = (message: string): never => {
  throw new ApiError('invalid_repository', message);
};

/**
 * Validates `url` and `ref` and returns what git will be given. Refused with 422
 * `invalid_repository`: a leading `-`, whitespace or control characters, `<transport>::` helpers
 * (ext::, fd::…), URLs carrying a password, schemes other than https, http, ssh, git and file, and
 * local paths or file:// URLs whose canonical location (or git directory) is outside every root.
 */
export function resolveRepositorySource(repository: { url: string; ref?: string }, workspaceRoots: readonly string[]): RepositorySource {
  const ref = repository.ref ?? null;
  if (ref !== null) validateRef(ref);
  const source = resolveUrl(repository.url, workspaceRoots);
  return source.startsWith('file:') ? { source, ref, localRoots: workspaceRoots } : { source, ref };
}

function resolveUrl(url: string, roots: readonly string[]): string {
  if (UNSAFE_CHARACTERS.test(url)) refuse('the repository URL contains whitespace or control characters');
  if (url.startsWith('-')) refuse('the repository URL must not start with "-"');
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(url)) refuse('git transport helpers ("<transport>::address") are not accepted');
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'file') return localRepository(fileUrlPath(url), roots);
  if (scheme !== undefined) return networkUrl(url, scheme);
  const scpLike = SCP_LIKE.exec(url);
  if (scpLike && !url.slice(0, url.indexOf(':')).includes('/')) {
    const [, user, host, remotePath] = scpLike;
    if (user?.startsWith('-') || host.startsWith('-') || remotePath.startsWith('-')) refuse('no part of the repository address may start with "-"');
    return url;
  }
  return localRepository(url, roots);
}

function networkUrl(url: string, scheme: string): string {
  if (!NETWORK_SCHEMES.has(scheme)) refuse(`the "${scheme}" scheme is not accepted; use https, http, ssh, git, file or user@host:path`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse('the repository URL is malformed');
  }
  if (parsed.hostname === '') refuse('the repository URL has no host');
  if (parsed.hostname.startsWith('-') || parsed.username.startsWith('-')) refuse('the repository host and user must not start with "-"');
  if (parsed.password !== '') refuse('credentials in the repository URL are not accepted; configure a git credential helper on the server');
  return url;
}

function fileUrlPath(url: string): string {
  try {
    return fileURLToPath(url);
  } catch {
    return refuse('the file:// URL must name a local path');
  }
}

/** A local repository must lie inside an allowed root, and so must everything its git directory uses. */
function localRepository(requested: string, roots: readonly string[]): string {
  try {
    return pathToFileURL(inspectLocalRepository(requested, roots)).href;
  } catch (error) {
    if (error instanceof LocalRepositoryRefused) refuse(error.message);
    throw error;
  }
}

/** Roughly `git check-ref-format --allow-onelevel`, plus no leading "-". */
export function validateRef(ref: string): void {
  const valid =
    !ref.startsWith('-') &&
    !ref.startsWith('/') &&
    !UNSAFE_CHARACTERS.test(ref) &&
    !/[~^:?*[\\]/.test(ref) &&
    !ref.includes('..') &&
    !ref.includes('@{') &&
    !ref.includes('//') &&
    ref !== '@' &&
    !ref.endsWith('/') &&
    !ref.endsWith('.') &&
    ref.split('/').every((component) => !component.startsWith('.') && !component.endsWith('.lock'));
  if (!valid) refuse('the ref is not a valid branch, tag or commit name');
}

// ---------------------------------------------------------------- running git

export interface CheckoutStep {
  /** the command as run, argv joined with spaces */
  command: string;
}

export interface CheckoutOptions {
  signal: AbortSignal;
  timeoutMs?: number;
  /** called before each visible git command; the returned function is called with its outcome */
  onStep(step: CheckoutStep): (status: 'completed' | 'failed') => void;
}

/** A checkout that did not complete; the message is meant for the client (bounded, git's own words). */
export class CheckoutFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckoutFailed';
  }
}

/**
 * Clones `repository` into `directory` and checks out its ref: a branch or tag through
 * `clone --branch`, a commit id (7 to 64 hex digits) through `clone --no-checkout`, a fetch when the
 * commit is not among the cloned refs, and `checkout --detach`. Resolves to the branch checked out,
 * or the ref itself when HEAD is detached (tag or commit).
 */
export async function runCheckout(repository: RepositorySource, directory: string, options: CheckoutOptions): Promise<{ branch: string }> {
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_CHECKOUT_TIMEOUT_MS);
  const { ref, source, localRoots } = repository;
  const name = path.basename(directory);
  const partialName = `${name}.partial`;
  const partial = `${directory}.partial`;
  const run = (args: string[], cwd: string, visible = true) => runGit(args, cwd, { deadline, local: localRoots !== undefined, visible }, options);
  // Everything server-owned is reached through the open parent, never through a path that a
  // symlink swapped in since could redirect.
  const parent = openCheckoutsDirectory(path.dirname(directory));
  try {
    await rm(entryPath(parent, partialName), { recursive: true, force: true });
    // The repository may have changed since the session was created.
    if (localRoots !== undefined) inspectLocalRepository(fileURLToPath(source), localRoots);
    mkdirSync(entryPath(parent, partialName));
    const created = identity(lstatSync(entryPath(parent, partialName)));
    const isCommit = ref !== null && COMMIT_ID.test(ref);
    const cloneFlags = ref === null ? [] : isCommit ? ['--no-checkout'] : ['--branch', ref];
    await run(['clone', ...cloneFlags, '--', source, partial], path.dirname(directory));
    if (isCommit) {
      const present = await run(['cat-file', '-e', `${ref}^{commit}`], partial, false).then(() => true, () => false);
      if (!present) await run(['fetch', 'origin', ref], partial);
      await run(['checkout', '--detach', ref], partial);
    }
    // Detached (a tag or a commit) has no symbolic HEAD; an empty repository has an unborn branch.
    const branch = await run(['symbolic-ref', '--short', '-q', 'HEAD'], partial, false).then((text) => text.trim(), () => ref ?? 'HEAD');
    assertUnmoved(parent, partialName, created);
    if (entryExists(parent, name)) throw new CheckoutFailed('the checkout directory already exists');
    renameSync(entryPath(parent, partialName), entryPath(parent, name));
    return { branch };
  } catch (error) {
    await rm(entryPath(parent, partialName), { recursive: true, force: true }).catch(() => {});
    if (error instanceof LocalRepositoryRefused) throw new CheckoutFailed(error.message);
    throw error instanceof CheckoutFailed ? error : new CheckoutFailed(error instanceof Error ? error.message : String(error));
  } finally {
    closeDirectory(parent);
  }
}

/** Removes a checkout and any unfinished attempt next to it; refuses a path that is not a checkout. */
export async function removeCheckout(directory: string): Promise<void> {
  if (path.basename(path.dirname(directory)) !== CHECKOUTS_DIRECTORY) throw new Error('not a server-owned checkout directory');
  const parent = openParentIfPresent(directory);
  if (parent === null) return;
  try {
    await rm(entryPath(parent, path.basename(directory)), { recursive: true, force: true });
    await rm(entryPath(parent, `${path.basename(directory)}.partial`), { recursive: true, force: true });
  } finally {
    closeDirectory(parent);
  }
}

export function checkoutIsComplete(directory: string): boolean {
  try {
    return lstatSync(directory).isDirectory();
  } catch {
    return false;
  }
}

function openCheckoutsDirectory(parentPath: string): OpenDirectory {
  try {
    return openDirectoryExact(parentPath);
  } catch (error) {
    throw new CheckoutFailed(`the checkouts directory cannot be used: ${(error as Error).message}`);
  }
}

/**
 * git writes by path name. Afterwards the attempt must still be the directory created for it, in
 * the same parent at the same path; otherwise a symlink was swapped in and the result is discarded.
 */
function assertUnmoved(parent: OpenDirectory, partialName: string, created: string): void {
  const attempt = openChildDirectory(parent, partialName);
  try {
    const sameParent = identity(statSync(parent.path)) === identity(fstatSync(parent.fd)) && lstatSync(parent.path).isDirectory();
    if (identity(fstatSync(attempt.fd)) !== created || !sameParent) throw new CheckoutFailed('the checkout directory was replaced while git ran');
  } finally {
    closeDirectory(attempt);
  }
}

function identity(info: { dev: number; ino: number }): string {
  return `${info.dev}:${info.ino}`;
}

function entryExists(parent: OpenDirectory, name: string): boolean {
  try {
    lstatSync(entryPath(parent, name));
    return true;
  } catch {
    return false;
  }
}

const KILL_GRACE_MS = 2000;
/** Variables that would point git at some other repository than the one it is cloning into. */
const REPOSITORY_LOCATING_VARIABLES = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_COMMON_DIR', 'GIT_NAMESPACE'];

/**
 * Passed to every git command (and, through GIT_CONFIG_PARAMETERS, to the upload-pack git runs in a
 * local source): no hooks and no fsmonitor, whatever any configuration says. Not shown in the
 * setup events, which name the command the client asked for.
 */
const HARDENING = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'submodule.recurse=false'];

function gitEnvironment(local: boolean): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REPOSITORY_LOCATING_VARIABLES) delete env[name];
  return {
    ...env,
    GIT_TERMINAL_PROMPT: '0',
    // Also covers redirects and anything git might be talked into fetching besides the top-level URL;
    // only a local source may use file://.
    GIT_ALLOW_PROTOCOL: local ? 'file' : 'https:http:ssh:git',
    GIT_SSH_COMMAND: env.GIT_SSH_COMMAND ?? 'ssh -o BatchMode=yes',
    LC_ALL: 'C',
  };
}

/** Runs one git command to completion; resolves to its stdout, rejects with CheckoutFailed. */
function runGit(args: string[], cwd: string, how: { deadline: number; local: boolean; visible: boolean }, options: CheckoutOptions): Promise<string> {
  const { deadline, visible } = how;
  const command = ['git', ...args].join(' ');
  const report = visible ? options.onStep({ command }) : () => {};
  return new Promise<string>((resolve, reject) => {
    if (options.signal.aborted) {
      report('failed');
      reject(new CheckoutFailed('the checkout was cancelled'));
      return;
    }
    const child = spawn('git', [...HARDENING, ...args], { cwd, env: gitEnvironment(how.local), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let stopped: string | null = null;
    let spawnError: string | null = null;
    let killTimer: NodeJS.Timeout | undefined;
    const stop = (reason: string) => {
      if (stopped !== null || child.pid === undefined) return;
      stopped = reason;
      signalGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), KILL_GRACE_MS);
    };
    const onAbort = () => stop('the checkout was cancelled');
    const timer = setTimeout(() => stop('the checkout timed out'), Math.max(0, deadline - Date.now()));
    options.signal.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => (stdout = (stdout + chunk.toString('utf8')).slice(-4096)));
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4096)));
    child.on('error', (error) => (spawnError = error.message));
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      options.signal.removeEventListener('abort', onAbort);
      // git's helpers (remote-https, index-pack, ssh) may outlive a stopped leader.
      if (stopped !== null && child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      if (exitCode === 0 && stopped === null) {
        report('completed');
        resolve(stdout);
        return;
      }
      report('failed');
      const why = spawnError !== null ? `git could not be started: ${spawnError}` : (stopped ?? `${command.split(' -- ')[0]} exited with code ${exitCode}`);
      reject(new CheckoutFailed(withDiagnostics(why, stderr)));
    });
  });
}

/** The reason plus the last lines git wrote to stderr, bounded. */
function withDiagnostics(reason: string, stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter(Boolean).slice(-3).join(' / ');
  const text = lines ? `${reason}: ${lines}` : reason;
  return text.length > 1000 ? `${text.slice(0, 999)}…` : text;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}
