/** Flag defaults and ranges are written once, in SERVE_FLAGS: Config and --help both read them there. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, UsageError } from '../../src/config/config.ts';
import { formatServeHelp, parseSize, SERVE_FLAGS } from '../../src/config/flags.ts';

const NO_TOKEN = {};

async function withStateDir<T>(run: (stateDir: string) => Promise<T>): Promise<T> {
  const stateDir = mkdtempSync(join(tmpdir(), 'agentd-flags-'));
  try {
    return await run(stateDir);
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}

describe('the flag table', () => {
  it('gives Config the defaults --help shows', async () => {
    await withStateDir(async (stateDir) => {
      const config = await loadConfig(['--state-dir', stateDir], NO_TOKEN, stateDir);
      const valueOf: Record<string, unknown> = {
        host: config.host, port: config.port, 'log-level': config.logLevel,
        'max-concurrent-turns': config.limits.maxConcurrentTurns, 'max-concurrent-turns-per-tenant': config.limits.maxConcurrentTurnsPerTenant,
        'max-queued-turns': config.limits.maxQueuedTurns, 'max-queued-turns-per-tenant': config.limits.maxQueuedTurnsPerTenant,
        'max-active-tenants': config.limits.maxActiveTenants, 'max-event-subscribers': config.limits.maxEventSubscribers,
        'max-event-subscribers-per-tenant': config.limits.maxEventSubscribersPerTenant, 'event-replay-limit': config.limits.eventReplayLimit,
        'maximum-request-bytes': config.limits.maximumRequestBytes, 'model-stall-timeout': config.limits.modelStallTimeoutMs / 1000,
        'turn-lease-seconds': config.turnLeaseSeconds, 'max-turn-takeovers': config.maxTurnTakeovers, 'revert-history': config.limits.revertHistory, 'max-watches-per-tenant': config.limits.maxWatchesPerTenant, 'revert-bytes-per-tenant': config.limits.revertBytesPerTenant,
        'sandbox-disk-quota': config.sandboxQuota?.bytes, 'sandbox-inode-quota': config.sandboxQuota?.inodes, 'sandbox-runtime': config.sandboxRuntime,
      };
      const help = formatServeHelp();
      for (const flag of SERVE_FLAGS.filter((row) => row.default !== undefined)) {
        assert.equal(valueOf[flag.name], flag.kind === 'size' ? parseSize(String(flag.default)) : flag.default, `--${flag.name}`);
        assert.match(help, new RegExp(`--${flag.name} .*\\(default: ${flag.default}\\)`));
      }
      assert.equal(Object.keys(valueOf).length, SERVE_FLAGS.filter((row) => row.default !== undefined).length, 'every default is checked');
    });
  });

  it('refuses an integer just outside the range its row gives, and takes the bounds themselves', async () => {
    await withStateDir(async (stateDir) => {
      for (const flag of SERVE_FLAGS.filter((row) => row.kind === 'integer')) {
        const bounds = [flag.min, flag.max].filter((bound): bound is number => bound !== undefined);
        assert.ok(bounds.length > 0, `--${flag.name} has a range`);
        for (const [value, accepted] of bounds.flatMap((bound): [number, boolean][] => [[bound, true], [bound === flag.min ? bound - 1 : bound + 1, false]])) {
          // a per-tenant limit may not exceed its global one (where it has one): give the global room
          const global = flag.name.replace('-per-tenant', '');
          const hasGlobal = global !== flag.name && SERVE_FLAGS.some((row) => row.name === global);
          const argv = ['--state-dir', stateDir, `--${flag.name}`, String(value), ...(hasGlobal ? [`--${global}`, String(value + 1)] : [])];
          const loading = loadConfig(argv, NO_TOKEN, stateDir);
          if (accepted) await loading;
          else await assert.rejects(loading, (error: unknown) => error instanceof UsageError && error.message.startsWith(`--${flag.name}: must be`));
        }
      }
    });
  });

  it('reads a size flag with binary units, takes 0 as off and refuses less than its minimum or a non-size', async () => {
    await withStateDir(async (stateDir) => {
      const quota = async (...argv: string[]) => (await loadConfig(['--state-dir', stateDir, ...argv], NO_TOKEN, stateDir)).sandboxQuota;
      assert.deepEqual(await quota(), { bytes: 10 * 1024 ** 3, inodes: 1_000_000 });
      assert.deepEqual(await quota('--sandbox-disk-quota', '16M', '--sandbox-inode-quota', '200'), { bytes: 16 * 1024 ** 2, inodes: 200 });
      assert.equal((await quota('--sandbox-disk-quota', '8MiB'))?.bytes, 8 * 1024 ** 2);
      assert.equal((await quota('--sandbox-disk-quota', '1t'))?.bytes, 1024 ** 4);
      assert.equal(await quota('--sandbox-disk-quota', '0'), null);
      const refused = async (argv: string[], message: RegExp) =>
        assert.rejects(quota(...argv), (error: unknown) => error instanceof UsageError && message.test(error.message));
      await refused(['--sandbox-disk-quota', '7M'], /^--sandbox-disk-quota: must be 0 \(off\) or at least 8388608 bytes$/);
      for (const bad of ['ten', '-1', '1.5G', '10X', '']) await refused(['--sandbox-disk-quota', bad], /^--sandbox-disk-quota: expected a size/);
      await refused(['--sandbox-disk-quota', '0', '--sandbox-inode-quota', '500'], /^--sandbox-inode-quota: needs a disk quota/);
    });
  });

  it('takes --sandbox-runtime bubblewrap or gvisor with a runner, and refuses another name or one without a runner', async () => {
    await withStateDir(async (stateDir) => {
      const runner = process.execPath; // an executable regular file outside the workspace root; only its checks run here
      const workspace = mkdtempSync(join(tmpdir(), 'agentd-flags-work-'));
      const load = (...argv: string[]) => loadConfig(['--state-dir', stateDir, '--workspace-root', workspace, ...argv], NO_TOKEN, stateDir);
      assert.equal((await load('--sandbox-runner', runner)).sandboxRuntime, 'bubblewrap');
      assert.equal((await load('--sandbox-runner', runner, '--sandbox-runtime', 'gvisor')).sandboxRuntime, 'gvisor');
      const refused = (argv: string[], message: RegExp) => assert.rejects(load(...argv), (error: unknown) => error instanceof UsageError && message.test(error.message));
      await refused(['--sandbox-runner', runner, '--sandbox-runtime', 'runc'], /^--sandbox-runtime: must be one of bubblewrap, gvisor$/);
      await refused(['--sandbox-runtime', 'gvisor'], /^--sandbox-runtime: only valid with --sandbox-runner$/);
      rmSync(workspace, { recursive: true, force: true });
    });
  });
});
