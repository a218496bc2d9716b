/**
 * What a repository session may name (CONTRACT.md §4, §17): the URL and ref are checked before
 * anything runs, and a local repository is placed inside the workspace. Refusals are 422
 * `invalid_repository`.
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ApiError } from '../domain/errors.ts';
import { inspectLocalRepository, LocalRepositoryRefused } from './local-repository.ts';
import { isInside } from './paths.ts';
import { readUrlOnce } from './url-reading.ts';

/** What git is asked to fetch. */
export interface RepositorySource {
  /** a network address as it was judged (normalised, url-reading.ts), or a local repository's file:// URL (a host path) */
  source: string;
  ref: string | null;
  /** a local repository: its host path and the roots it lies in, to check it again before cloning */
  local?: { path: string; roots: readonly string[] };
}

const NETWORK_SCHEMES = new Set(['https', 'http', 'ssh', 'git']);
const UNSAFE_CHARACTERS = /[\s\u0000-\u001f\u007f-\u009f]/u;
export const SCP_LIKE = /^(?:([A-Za-z0-9._-]+)@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(.+)$/;

const refuse = (message: string): never => {
  throw new ApiError('invalid_repository', message);
};

/**
 * Validates `url` and `ref` and returns what git will be given. Refused: a leading `-`, whitespace
 * or control characters, `<transport>::` helpers (ext::, fd::…), URLs carrying a password, schemes
 * other than https, http, ssh, git and file, and local paths or file:// URLs outside every root.
 * On the host (`sandboxed` false) a local repository is inspected (local-repository.ts); in a
 * sandbox only its place is checked, by name: git runs in the sandbox, where nothing the tenant
 * cannot see exists, and the host walks none of the tenant's files.
 */
export async function resolveRepositorySource(repository: { url: string; ref?: string }, workspaceRoots: readonly string[], sandboxed = false): Promise<RepositorySource> {
  const ref = repository.ref ?? null;
  if (ref !== null) validateRef(ref);
  const source = resolveUrl(repository.url);
  if (!('local' in source)) return { source: source.network, ref };
  const local = sandboxed ? namedInside(source.local, workspaceRoots[0]) : await inspected(source.local, workspaceRoots);
  return { source: pathToFileURL(local).href, ref, local: { path: local, roots: workspaceRoots } };
}

function resolveUrl(url: string): { network: string } | { local: string } {
  if (UNSAFE_CHARACTERS.test(url)) refuse('the repository URL contains whitespace or control characters');
  if (url.startsWith('-')) refuse('the repository URL must not start with "-"');
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(url)) refuse('git transport helpers ("<transport>::address") are not accepted');
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'file') return { local: fileUrlPath(url) };
  if (scheme !== undefined) return { network: networkUrl(url, scheme) };
  const scpLike = SCP_LIKE.exec(url);
  if (scpLike && !url.slice(0, url.indexOf(':')).includes('/')) {
    const [, user, host, remotePath] = scpLike;
    if (user?.startsWith('-') || host.startsWith('-') || remotePath.startsWith('-')) refuse('no part of the repository address may start with "-"');
    return { network: url };
  }
  return { local: url };
}

/** The URL as git will be given it: read once (url-reading.ts), judged in that form, normalised. */
function networkUrl(url: string, scheme: string): string {
  if (!NETWORK_SCHEMES.has(scheme)) refuse(`the "${scheme}" scheme is not accepted; use https, http, ssh, git, file or user@host:path`);
  const parsed = URL.parse(url);
  if (parsed === null) return refuse('the repository URL is malformed');
  if (parsed.hostname === '') refuse('the repository URL has no host');
  if (parsed.hostname.startsWith('-') || parsed.username.startsWith('-')) refuse('the repository host and user must not start with "-"');
  if (parsed.password !== '') refuse('credentials in the repository URL are not accepted (clones run with no credential of any kind)');
  const reading = readUrlOnce(url, { query: false });
  if (reading.problem !== undefined) return refuse(`the repository URL is refused: ${reading.problem}`);
  return reading.url.href;
}

function fileUrlPath(url: string): string {
  try {
    return fileURLToPath(url);
  } catch {
    return refuse('the file:// URL must name a local path');
  }
}

/** On the host: the canonical path of a local repository that passed the inspection. */
async function inspected(requested: string, roots: readonly string[]): Promise<string> {
  try {
    return (await inspectLocalRepository(requested, roots)).path;
  } catch (error) {
    if (error instanceof LocalRepositoryRefused) refuse(error.message);
    throw error;
  }
}

/** In a sandbox: the path named, resolved by name alone against the workspace, which it must lie in. */
function namedInside(requested: string, workspace: string): string {
  const named = path.resolve(workspace, requested);
  if (!isInside(named, workspace)) refuse('the local repository is outside every allowed workspace root');
  return named;
}

/** Roughly `git check-ref-format --allow-onelevel`, plus no leading "-". */
function validateRef(ref: string): void {
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
