import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeRepository } from '../support/git.ts';
import { checkoutDirectory, runCheckout } from '../../src/workspace/checkout.ts';
import { resolveRepositorySource } from '../../src/workspace/repository-source.ts';
import { hostWorkspaceCommands } from '../support/workspace-commands.ts';

const repository = (directory: string, file: string) => makeRepository(directory, { [file]: 'x\n' });

function setup(t: { after(fn: () => void): void }) {
  const top = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-checkout-')));
  t.after(() => rmSync(top, { recursive: true, force: true }));
  const root = path.join(top, 'root');
  const foreign = path.join(top, 'foreign');
  repository(path.join(root, 'project'), 'own.txt');
  repository(foreign, 'foreign-secret.txt');
  return { root, foreign };
}

const options = (root: string) => ({ commands: hostWorkspaceCommands([root]), signal: new AbortController().signal, onStep: () => () => {} });

test('a repository changed to reach outside after the session was created is refused at checkout time', async (t) => {
  const { root, foreign } = setup(t);
  const source = await resolveRepositorySource({ url: path.join(root, 'project') }, [root]);
  const objects = path.join(root, 'project', '.git', 'objects');
  rmSync(objects, { recursive: true });
  symlinkSync(path.join(foreign, '.git', 'objects'), objects);
  const directory = checkoutDirectory([root], 'session-1');
  await assert.rejects(runCheckout(source, directory, options(root)), /outside every allowed workspace root/);
  assert.equal(existsSync(directory), false);
  assert.equal(existsSync(`${directory}.partial`), false);
});

test('a .agentd-checkouts symlink out of the root is refused, not followed', (t) => {
  const { root, foreign } = setup(t);
  symlinkSync(foreign, path.join(root, '.agentd-checkouts'));
  assert.throws(() => checkoutDirectory([root], 'session-1'), /symbolic link/);
});

test('a local checkout runs no hook, whatever the environment configures', async (t) => {
  const { root } = setup(t);
  const hooks = path.join(root, '..', 'hooks');
  mkdirSync(hooks);
  const marker = path.join(root, '..', 'hook-ran');
  writeFileSync(path.join(hooks, 'post-checkout'), `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
  const saved = { ...process.env };
  Object.assign(process.env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.hooksPath', GIT_CONFIG_VALUE_0: hooks });
  t.after(() => {
    for (const name of ['GIT_CONFIG_COUNT', 'GIT_CONFIG_KEY_0', 'GIT_CONFIG_VALUE_0']) delete process.env[name];
    Object.assign(process.env, saved);
  });
  const directory = checkoutDirectory([root], 'session-2');
  await runCheckout(await resolveRepositorySource({ url: path.join(root, 'project') }, [root]), directory, options(root));
  assert.ok(existsSync(path.join(directory, 'own.txt')));
  assert.equal(existsSync(marker), false, 'the post-checkout hook did not run');
});
