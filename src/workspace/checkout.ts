/**
 * Server-owned repository checkouts (CONTRACT.md §4, §17). A checkout lives at
 * `<first workspace root>/.agentd-checkouts/<sessionId>`, inside the first root so the session cwd
 * is an allowed path. git writes into `<sessionId>.partial` first, and the directory is renamed
 * into place only when every step succeeded: the final directory exists if and only if the
 * checkout completed, which is what a restarted server checks.
 *
 * Every step, git's and the removals alike, is a command run where the tenant's own commands run
 * (workspace-commands.ts): in a sandboxed boundary that is the tenant's sandbox, whose view holds
 * only its workspace, so a configuration, filter or symlink the tenant plants while git runs acts
 * on nothing the tenant could not already touch, and nothing of the host's environment is there to
 * take. git gets an environment and configuration of the server's choosing (git-command.ts), argv
 * only, and a network destination checked against the sandbox's refused addresses and pinned
 * (repository-destination.ts). A local repository is cloned from exactly the git directory found
 * in the directory named, by an upload-pack that does no suffix search of its own.
 */
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { gitArgv, type GitInvocation } from './git-command.ts';
import { inspectLocalRepository, LocalRepositoryRefused } from './local-repository.ts';
import { closeDirectory, makeDirectories } from './no-follow.ts';
import { DestinationRefused, pinDestination, type PinnedDestination, type Resolver } from './repository-destination.ts';
import type { RepositorySource } from './repository-source.ts';
import { removeTrees, type WorkspaceCommands } from './workspace-commands.ts';

const CHECKOUTS_DIRECTORY = '.agentd-checkouts';
const DEFAULT_CHECKOUT_TIMEOUT_MS = 10 * 60_000;
const COMMIT_ID = /^[0-9a-f]{7,64}$/i;
/** upload-pack serves exactly the directory it is given (`--strict`: no `.git` or `.git/.git` appended). */
const STRICT_UPLOAD_PACK = 'git upload-pack --strict';

/**
 * Where the session's checkout goes. On the host (`onHost`) the parent is created now, without
 * following a symlink, which could lead the checkout out of the root; in a sandbox the checkout's
 * first command creates it as the guest, whose directory it must be.
 */
export function checkoutDirectory(workspaceRoots: readonly string[], sessionId: string, onHost = true): string {
  const parent = path.join(workspaceRoots[0], CHECKOUTS_DIRECTORY);
  if (onHost) closeDirectory(makeDirectories(workspaceRoots[0], parent));
  return path.join(parent, sessionId);
}

interface CheckoutStep {
  /** the command as run, git's arguments joined with spaces */
  command: string;
}

export interface CheckoutOptions {
  /** where the commands run: the tenant's sandbox, or the host */
  commands: WorkspaceCommands;
  signal: AbortSignal;
  timeoutMs?: number;
  /** called before each visible git command; the returned function is called with its outcome */
  onStep(step: CheckoutStep): (status: 'completed' | 'failed') => void;
  /** how a network host is resolved (tests); the system's resolver otherwise */
  resolve?: Resolver;
}

/** A checkout that did not complete; the message is meant for the client (bounded, git's own words). */
class CheckoutFailed extends Error {
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
  const { commands } = options;
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_CHECKOUT_TIMEOUT_MS);
  const { ref } = repository;
  const partial = `${directory}.partial`;
  const [guestCheckouts, guestPartial, guestFinal] = [path.dirname(directory), partial, directory].map((hostPath) => commands.pathOf(hostPath));
  try {
    await runCommand(['mkdir', '-p', '--', guestCheckouts], commands.workspace, deadline, options, 'creating the checkouts directory');
    await removeTrees(commands, [partial], options.signal);
    const { source, how } = await sourceOf(repository, options, deadline);
    const uploadPack = repository.local ? ['--upload-pack', STRICT_UPLOAD_PACK] : [];
    const git = (args: string[], cwd: string, visible = true) => runGit({ ...how, args }, cwd, deadline, visible, options);
    // Shown in the setup events as the client's command, like the -c settings: clone's own flags only.
    const clone = (args: string[]) => runGit({ ...how, args: ['clone', ...uploadPack, ...args] }, guestCheckouts, deadline, true, options, ['clone', ...args]);
    const isCommit = ref !== null && COMMIT_ID.test(ref);
    const cloneFlags = ref === null ? [] : isCommit ? ['--no-checkout'] : ['--branch', ref];
    await clone([...cloneFlags, '--', source, guestPartial]);
    if (isCommit) {
      const present = await git(['cat-file', '-e', `${ref}^{commit}`], guestPartial, false).then(() => true, () => false);
      if (!present) await git(['fetch', 'origin', ref], guestPartial);
      await git(['checkout', '--detach', ref], guestPartial);
    }
    // Detached (a tag or a commit) has no symbolic HEAD; an empty repository has an unborn branch.
    const branch = await git(['symbolic-ref', '--short', '-q', 'HEAD'], guestPartial, false).then((text) => lastLine(text), () => ref ?? 'HEAD');
    // `mv -T` renames the directory itself (never into a directory of that name), where the tenant's commands run.
    await runCommand(['mv', '-T', '--', guestPartial, guestFinal], commands.workspace, deadline, options, 'moving the finished checkout into place');
    return { branch: branch || (ref ?? 'HEAD') };
  } catch (error) {
    await removeTrees(commands, [partial]).catch(() => {});
    throw error instanceof CheckoutFailed ? error : new CheckoutFailed(error instanceof Error ? error.message : String(error));
  }
}

/** Removes a checkout and any unfinished attempt next to it, where the tenant's commands run; refuses a path that is not a checkout. */
export async function removeCheckout(directory: string, commands: WorkspaceCommands): Promise<void> {
  if (path.basename(path.dirname(directory)) !== CHECKOUTS_DIRECTORY) throw new Error('not a server-owned checkout directory');
  await removeTrees(commands, [directory, `${directory}.partial`]);
}

export function checkoutIsComplete(directory: string): boolean {
  try {
    return lstatSync(directory).isDirectory();
  } catch {
    return false;
  }
}

type GitSettings = Omit<GitInvocation, 'args'>;

/**
 * What git is given as the source, and how it must run to reach it. A local repository: the git
 * directory that git itself finds in exactly the directory named (its search stops there), after
 * the host's inspection when git runs on the host. A network one: the checked, pinned destination.
 */
async function sourceOf(repository: RepositorySource, options: CheckoutOptions, deadline: number): Promise<{ source: string; how: GitSettings }> {
  const { commands } = options;
  if (repository.local) {
    const { path: named, roots } = repository.local;
    const inspected = commands.sandboxed ? null : await inspectAgain(named, roots);
    const guestNamed = commands.pathOf(named);
    const how: GitSettings = { searchPath: commands.searchPath(), protocols: 'file' };
    const located = await runGit({ ...how, ceiling: path.dirname(guestNamed), args: ['rev-parse', '--absolute-git-dir'] }, guestNamed, deadline, false, options).catch((error: Error) => {
      throw new CheckoutFailed(`the local path is not a git repository (${error.message})`);
    });
    const gitDirectory = lastLine(located);
    // On the host the git directory must be one the inspection judged, or the repository changed meanwhile.
    if (inspected !== null && !inspected.gitDirectories.has(gitDirectory)) throw new CheckoutFailed('the local repository changed while it was inspected');
    return { source: pathToFileURL(gitDirectory).href, how };
  }
  let pinned: PinnedDestination;
  try {
    pinned = await pinDestination(repository.source, options.resolve);
  } catch (error) {
    if (error instanceof DestinationRefused) throw new CheckoutFailed(error.message);
    throw error;
  }
  return { source: pinned.url, how: { searchPath: commands.searchPath(), protocols: 'network', config: pinned.config, sshOptions: pinned.sshOptions } };
}

/** The repository may have changed since the session was created. */
async function inspectAgain(named: string, roots: readonly string[]) {
  try {
    return await inspectLocalRepository(named, roots);
  } catch (error) {
    if (error instanceof LocalRepositoryRefused) throw new CheckoutFailed(error.message);
    throw error;
  }
}

/** Runs one git command to completion; resolves to its output, rejects with CheckoutFailed. */
async function runGit(invocation: GitInvocation, cwd: string, deadline: number, visible: boolean, options: CheckoutOptions, shownArgs = invocation.args): Promise<string> {
  const shown = ['git', ...shownArgs].join(' ');
  const report = visible ? options.onStep({ command: shown }) : () => {};
  try {
    const output = await runCommand(gitArgv(invocation), cwd, deadline, options, shown.split(' -- ')[0]);
    report('completed');
    return output;
  } catch (error) {
    report('failed');
    throw error;
  }
}

/** Runs argv where the tenant's commands run; `what` names it in the failure (e.g. `git clone --branch x`). */
async function runCommand(argv: string[], cwd: string, deadline: number, options: CheckoutOptions, what: string): Promise<string> {
  if (options.signal.aborted) throw new CheckoutFailed('the checkout was cancelled');
  const timeoutMs = Math.max(1, deadline - Date.now());
  const result = await options.commands.run(argv, { cwd, signal: options.signal, timeoutMs });
  if (options.signal.aborted) throw new CheckoutFailed('the checkout was cancelled');
  if (result.failure !== null) throw new CheckoutFailed(withDiagnostics(`${what}: ${result.failure}`, result.output));
  if (result.exitCode !== 0) throw new CheckoutFailed(withDiagnostics(`${what} exited with code ${result.exitCode}`, result.output));
  return result.output;
}

function lastLine(text: string): string {
  return text.split('\n').map((line) => line.trim()).filter(Boolean).at(-1) ?? '';
}

/** The reason plus the last lines the command wrote, bounded. */
function withDiagnostics(reason: string, output: string): string {
  const lines = output.split('\n').map((line) => line.trim()).filter(Boolean).slice(-3).join(' / ');
  const text = lines ? `${reason}: ${lines}` : reason;
  return text.length > 1000 ? `${text.slice(0, 999)}…` : text;
}
