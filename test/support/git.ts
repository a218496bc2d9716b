/**
 * git as the tests run it. A developer may run the suite from a git hook, which exports GIT_DIR,
 * GIT_INDEX_FILE, GIT_WORK_TREE and more: a git inheriting them would work on the developer's
 * repository instead of the test's. So a test's git sees none of the caller's GIT_* variables,
 * nor the system and global config, and commits under a fixed identity.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const TEST_IDENTITY = { GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 'test@example.com', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 'test@example.com' };

/** The caller's environment without its GIT_* variables, with the config isolated and the test identity. */
function gitEnvironment(): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(([name]) => !name.startsWith('GIT_'));
  return { ...Object.fromEntries(inherited), GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', ...TEST_IDENTITY };
}

/** Runs git in `cwd` in gitEnvironment(); returns its standard output, trimmed. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: gitEnvironment(), encoding: 'utf8' }).trim();
}

/** A repository in `directory` (made if missing) on branch main, with one commit of `files` (name → content). */
export function makeRepository(directory: string, files: Record<string, string>): void {
  mkdirSync(directory, { recursive: true });
  git(directory, 'init', '-q', '-b', 'main');
  for (const [name, content] of Object.entries(files)) writeFileSync(join(directory, name), content);
  git(directory, 'add', '.');
  git(directory, 'commit', '-q', '-m', 'first');
}
