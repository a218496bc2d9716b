import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitArgv } from '../../src/workspace/git-command.ts';

test('git sees none of the operator\'s configuration, credentials or environment', (t) => {
  const home = mkdtempSync(join(tmpdir(), 'agentd-operator-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  writeFileSync(join(home, '.gitconfig'), '[credential]\n\thelper = store\n[core]\n\thooksPath = /operator/hooks\n[url "https://operator@example.test/"]\n\tinsteadOf = https://example.test/\n');
  writeFileSync(join(home, '.netrc'), 'machine example.test login operator password netrc-secret\n');
  const argv = gitArgv({ args: ['config', '--list', '--show-origin'], searchPath: process.env.PATH!, protocols: 'network' });
  assert.deepEqual(argv.slice(0, 2), ['env', '-i'], 'the environment is built from nothing');
  const listing = execFileSync(argv[0], argv.slice(1), { cwd: home, env: { ...process.env, HOME: home, SSH_AUTH_SOCK: '/operator/agent.sock', GIT_DIR: home, OPENAI_API_KEY: 'sk-secret' }, encoding: 'utf8' });
  assert.doesNotMatch(listing, /operator|store|file:/, 'no config file is read: only the server\'s own settings');
  assert.match(listing, /command line:\s+credential\.helper=$/m);
  assert.match(listing, /command line:\s+core\.hookspath=\/dev\/null$/m);
  assert.match(listing, /command line:\s+http\.followredirects=false$/m);
  const environment = execFileSync(argv[0], [...argv.slice(1, argv.indexOf('git')), 'env'], { env: { ...process.env, HOME: home, SSH_AUTH_SOCK: '/operator/agent.sock', OPENAI_API_KEY: 'sk-secret' }, encoding: 'utf8' });
  assert.doesNotMatch(environment, /SSH_AUTH_SOCK|OPENAI_API_KEY|sk-secret/);
  assert.match(environment, /^HOME=\/nonexistent\/agentd-git$/m);
  assert.match(environment, /^GIT_SSH_COMMAND=ssh -F \/dev\/null .*PubkeyAuthentication=no/m);
});
