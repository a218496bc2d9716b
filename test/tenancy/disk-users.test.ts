// Who uses a tenant's mounted file system on this machine (src/tenancy/disk-users.ts): kernel
// locks, so another process's use is seen while it lives and gone the moment it is killed (-9),
// and the mutex keeps a second process out while one mounts or unmounts.
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { diskUsers } from '../../src/tenancy/disk-users.ts';

const MODULE = new URL('../../src/tenancy/disk-users.ts', import.meta.url).pathname;

/**
 * Another process that starts using the mounts of `stateDir` (or only holds the mutex), then waits
 * to be killed, which the test's end does whatever happened. Its locks outlive every reference to
 * them: the collector runs before it says it is ready.
 */
async function otherProcess(t: TestContext, stateDir: string, hold: 'use' | 'mutex') {
  const script = `
    setInterval(() => {}, 1000);
    const readyOnceCollected = () => setTimeout(() => {
      gc();
      console.log('ready');
    });
    const { diskUsers } = await import(${JSON.stringify(MODULE)});
    const users = await diskUsers(${JSON.stringify(stateDir)});
    await users.exclusively(async (section) => {
      section.othersUse();
      section.startUsing();
      if (${JSON.stringify(hold)} === 'mutex') {
        readyOnceCollected();
        await new Promise(() => {});
      }
    });
    readyOnceCollected();`;
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => {
    child.kill('SIGKILL');
  });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  while (!out.includes('ready')) {
    if (child.exitCode !== null) throw new Error('the other process ended');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    async kill() {
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    },
  };
}

/** What another process's probe says. */
async function probeFromAnotherProcess(stateDir: string): Promise<string> {
  const script = `
    const { diskUsers } = await import(${JSON.stringify(MODULE)});
    const users = await diskUsers(${JSON.stringify(stateDir)});
    console.log('others=' + (await users.exclusively(async (section) => section.othersUse())));`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  await once(child, 'exit');
  return out.trim();
}

describe('users of a tenant\'s mounts on one machine', () => {
  it('sees another process\'s use while it lives, not its own, and none once it is killed (-9)', async (t) => {
    const stateDir = mkdtempSync(join(tmpdir(), 'agentd-disk-users-'));
    const users = await diskUsers(stateDir);
    assert.equal(await users.exclusively(async (section) => section.othersUse()), false, 'nobody uses them yet');
    await users.exclusively(async (section) => section.startUsing());
    assert.equal(await users.exclusively(async (section) => section.othersUse()), false, 'its own use is not another\'s');

    const other = await otherProcess(t, stateDir, 'use');
    assert.equal(await users.exclusively(async (section) => section.othersUse()), true);
    await other.kill();
    assert.equal(await users.exclusively(async (section) => section.othersUse()), false, 'the kernel let go of the killed process\'s lock');
    // this process's own use outlived its probes: another process sees it, until it stops using
    assert.equal(await probeFromAnotherProcess(stateDir), 'others=true');
    await users.exclusively(async (section) => section.stopUsing());
    assert.equal(await probeFromAnotherProcess(stateDir), 'others=false');
  });

  it('keeps a second process out while one holds the mutex, until that one is killed', async (t) => {
    const stateDir = mkdtempSync(join(tmpdir(), 'agentd-disk-users-'));
    const other = await otherProcess(t, stateDir, 'mutex');
    const users = await diskUsers(stateDir);
    let entered = false;
    const waiting = users.exclusively(async (section) => {
      entered = true;
      return section.othersUse();
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(entered, false, 'the mutex is held by the other process');
    await other.kill();
    assert.equal(await waiting, false, 'entered once the holder died, whose use died with it');
  });
});
