import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git, makeRepository } from './git.ts';

test('a test\'s git ignores the GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE of a git hook that runs the suite', (t) => {
  const top = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-git-env-')));
  const developer = join(top, 'developer');
  execFileSync('git', ['init', '-q', developer], { env: { PATH: process.env.PATH } });
  const hookVariables = { GIT_DIR: join(developer, '.git'), GIT_WORK_TREE: developer, GIT_INDEX_FILE: join(developer, '.git', 'index') };
  const saved = Object.fromEntries(Object.keys(hookVariables).map((name) => [name, process.env[name]]));
  Object.assign(process.env, hookVariables);
  t.after(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(top, { recursive: true, force: true });
  });

  const project = join(top, 'project');
  makeRepository(project, { 'README.md': 'test repository\n' });

  assert.equal(git(project, 'rev-parse', '--show-toplevel'), project);
  assert.equal(git(project, 'log', '--format=%an <%ae> %s'), 'Test <test@example.com> first');
  assert.equal(git(project, 'ls-files'), 'README.md');
  const developerCommits = execFileSync('git', ['rev-list', '--all'], { env: { PATH: process.env.PATH, GIT_DIR: join(developer, '.git') }, encoding: 'utf8' });
  assert.equal(developerCommits, '', 'nothing was committed to the developer\'s repository');
});
