import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isAllowedVariable, toolEnvironment } from '../../src/exec/tool-environment.ts';
import { runInProcessGroup } from '../../src/exec/process-group.ts';

/** the plain settings a tool may see as the server has them */
const PLAIN_SETTINGS = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/agentd',
  USER: 'agentd',
  LOGNAME: 'agentd',
  SHELL: '/bin/bash',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  TERM: 'xterm',
  TZ: 'UTC',
  TMPDIR: '/var/tmp',
};

const SERVER_ENVIRONMENT = {
  ...PLAIN_SETTINGS,
  SERVICE_TOKEN: 'canary-token',
  OPENAI_API_KEY: 'canary-openai',
  ANTHROPIC_API_KEY: 'canary-anthropic',
  AWS_SECRET_ACCESS_KEY: 'canary-aws',
  AWS_ACCESS_KEY_ID: 'canary-aws-id',
  DATABASE_URL: 'postgres://agentd:canary-db@db/agentd',
  PGPASSWORD: 'canary-pg',
  OLLAMA_KEY: 'canary-configured-apiKeyEnv',
  GITHUB_TOKEN: 'canary-github',
  NPM_CONFIG__AUTH: 'canary-npm',
  // not secrets, but each makes a program run code of someone else's choosing
  NODE_OPTIONS: '--require /tmp/canary-evil.js',
  LD_PRELOAD: '/tmp/canary-evil.so',
  BASH_ENV: '/tmp/canary-evil.sh',
  GIT_SSH_COMMAND: 'canary-evil',
  PAGER: 'less',
};

test('the tool environment is the allowlist of plain settings plus the non-interactive ones', () => {
  assert.deepEqual(toolEnvironment(SERVER_ENVIRONMENT), {
    ...PLAIN_SETTINGS,
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    GIT_TERMINAL_PROMPT: '0',
  });
});

test('no credential-like or code-loading name is allowed, whatever its spelling', () => {
  for (const name of ['SERVICE_TOKEN', 'OPENAI_API_KEY', 'MY_MODEL_KEY', 'DATABASE_URL', 'AWS_SECRET_ACCESS_KEY', 'path', 'Path', 'LC_', 'LC_ALL=', 'NODE_OPTIONS', 'LD_LIBRARY_PATH', 'BASH_ENV', 'ENV', 'PROMPT_COMMAND']) {
    assert.equal(isAllowedVariable(name), false, name);
  }
});

test('the environment is idempotent and always has a PATH', () => {
  const once = toolEnvironment(SERVER_ENVIRONMENT);
  assert.deepEqual(toolEnvironment(once), once);
  assert.equal(toolEnvironment({}).PATH, '/usr/local/bin:/usr/bin:/bin');
});

test('the process-group runner applies the allowlist itself, so a caller that passes the server environment leaks nothing', async () => {
  const result = await runInProcessGroup({
    argv: ['env'],
    cwd: '/',
    env: { ...(process.env as Record<string, string>), ...SERVER_ENVIRONMENT, PATH: process.env.PATH ?? '/usr/bin:/bin' },
    timeoutMs: 10_000,
    signal: new AbortController().signal,
    onOutput: () => {},
  });
  assert.equal(result.exitCode, 0);
  assert.match(result.output, /^USER=agentd$/m);
  assert.doesNotMatch(result.output, /canary/);
});
