/**
 * CONTRACT.md §23: every `agentd serve` flag is also read from `AGENTD_<FLAG>`; the flag wins; a
 * bad value names the variable; `--help` lists the variables.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, UsageError } from '../../src/config/config.ts';
import { addEnvironmentFlags } from '../../src/config/environment-flags.ts';
import { environmentVariableOf, parseFlags, SERVE_FLAGS, type FlagDefinition } from '../../src/config/flags.ts';
import { http } from '../support/http.ts';

const BIN = new URL('../../bin/agentd.js', import.meta.url).pathname;

/** One value of each kind, as a command line gives it and as its variable does. */
function sample(flag: FlagDefinition): { argv: string[]; variable: string } {
  switch (flag.kind) {
    case 'boolean': return { argv: [`--${flag.name}`], variable: 'true' };
    case 'list': return { argv: [`--${flag.name}`, '/srv/a', `--${flag.name}`, '/srv/b'], variable: '/srv/a, /srv/b' };
    case 'integer': return { argv: [`--${flag.name}`, '7'], variable: '7' };
    case 'size': return { argv: [`--${flag.name}`, '16M'], variable: '16M' };
    case 'string': return { argv: [`--${flag.name}`, `/value/of/${flag.name}`], variable: `/value/of/${flag.name}` };
  }
}

async function withScratch<T>(run: (directory: string) => Promise<T>): Promise<T> {
  const directory = mkdtempSync(join(tmpdir(), 'agentd-env-flags-'));
  try {
    return await run(directory);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

describe('agentd serve flags from AGENTD_* variables', () => {
  it('reads every flag of the table from its variable exactly as from the command line', () => {
    for (const flag of SERVE_FLAGS) {
      const { argv, variable } = sample(flag);
      const fromEnvironment = parseFlags([]);
      const taken = addEnvironmentFlags(fromEnvironment, { [environmentVariableOf(flag.name)]: variable });
      assert.deepEqual(fromEnvironment, parseFlags(argv), `--${flag.name} from ${environmentVariableOf(flag.name)}`);
      assert.deepEqual([...taken], [flag.name]);
    }
    assert.equal(environmentVariableOf('database-url'), 'AGENTD_DATABASE_URL');
  });

  it('takes the configuration from the variables, and a given flag over its variable', async () => {
    await withScratch(async (directory) => {
      const env = { AGENTD_PORT: '5123', AGENTD_STATE_DIR: directory, AGENTD_WORKSPACE_ROOT: `${directory}/a,${directory}/b`, AGENTD_YOLO: 'true', AGENTD_LOG_LEVEL: 'warn', AGENTD_MAX_QUEUED_TURNS: 'not a number' };
      const config = await loadConfig(['--log-level', 'error', '--max-queued-turns', '9'], env, directory);
      assert.equal(config.port, 5123);
      assert.equal(config.stateDir, directory);
      assert.deepEqual(config.workspaceRoots, [`${directory}/a`, `${directory}/b`]);
      assert.equal(config.yolo, true);
      assert.equal(config.logLevel, 'error', 'the flag wins over AGENTD_LOG_LEVEL');
      assert.equal(config.limits.maxQueuedTurns, 9, 'a bad variable is not read when its flag is given');
      const unset = await loadConfig([], { AGENTD_STATE_DIR: directory, AGENTD_YOLO: 'false', AGENTD_PORT: '' }, directory);
      assert.equal(unset.yolo, false);
      assert.equal(unset.port, 4096, 'an empty variable counts as unset');
    });
  });

  it('names the variable, not the flag, when the value came from the variable', async () => {
    await withScratch(async (directory) => {
      const refusals: [Record<string, string>, RegExp][] = [
        [{ AGENTD_PORT: 'eighty' }, /^AGENTD_PORT: expected an integer, got "eighty"$/],
        [{ AGENTD_PORT: '70000' }, /^AGENTD_PORT: must be between 0 and 65535$/],
        [{ AGENTD_DATABASE_URL: 'mysql://db/agentd' }, /^AGENTD_DATABASE_URL: must start with postgres:\/\//],
        [{ AGENTD_ALLOW_REMOTE: 'yes' }, /^AGENTD_ALLOW_REMOTE: expected true or false, got "yes"$/],
        [{ AGENTD_CORS_ORIGIN: 'https://a.example,,https://b.example' }, /^AGENTD_CORS_ORIGIN: an empty item/],
        [{ AGENTD_SANDBOX_DISK_QUOTA: 'lots' }, /^AGENTD_SANDBOX_DISK_QUOTA: expected a size/],
        [{ AGENTD_HOST: '0.0.0.0' }, /^AGENTD_HOST: 0\.0\.0\.0 is not a loopback address/],
      ];
      for (const [env, message] of refusals) {
        await assert.rejects(loadConfig([], { AGENTD_STATE_DIR: directory, ...env }, directory), (error: unknown) => error instanceof UsageError && message.test(error.message), JSON.stringify(env));
      }
      await assert.rejects(loadConfig(['--port', 'eighty'], { AGENTD_STATE_DIR: directory }, directory), /^Error: --port: expected an integer/, 'a flag is still named as a flag');
    });
  });

  it('lists each variable in agentd serve --help', () => {
    const help = spawnSync(process.execPath, [BIN, 'serve', '--help'], { encoding: 'utf8' }).stdout;
    for (const flag of SERVE_FLAGS) {
      const line = help.split('\n').find((row) => row.startsWith(`  --${flag.name} `) || row === `  --${flag.name}` || row.startsWith(`  --${flag.name}  `));
      assert.ok(line?.includes(`[${environmentVariableOf(flag.name)}]`), `--${flag.name}'s line names its variable: ${line}`);
    }
  });

  it('starts a server configured only by the environment, and refuses a bad variable with exit 2', async () => {
    await withScratch(async (directory) => {
      const bad = spawnSync(process.execPath, [BIN, 'serve'], { encoding: 'utf8', env: { PATH: process.env.PATH, AGENTD_STATE_DIR: directory, AGENTD_LOG_LEVEL: 'loud' } });
      assert.equal(bad.status, 2);
      assert.equal(bad.stderr.trim(), 'agentd: AGENTD_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent');

      const env = { PATH: process.env.PATH, AGENTD_PORT: '0', AGENTD_STATE_DIR: directory, AGENTD_WORKSPACE_ROOT: directory, AGENTD_LOG_LEVEL: 'silent', SERVICE_TOKEN: 'e'.repeat(32) };
      const child = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      try {
        const url = await new Promise<string>((resolve, reject) => {
          let output = '';
          child.stdout.on('data', (chunk) => {
            output += chunk;
            const match = /agentd listening on (\S+)/.exec(output);
            if (match) resolve(match[1]);
          });
          child.on('exit', (code) => reject(new Error(`agentd exited ${code}: ${output}`)));
        });
        const ready = await http('GET', `${url}/readyz`, { headers: { authorization: `Bearer ${'e'.repeat(32)}` } });
        assert.equal(ready.status, 200);
      } finally {
        child.kill('SIGTERM');
      }
    });
  });
});
