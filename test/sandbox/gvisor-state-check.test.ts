/**
 * When the tenant's gVisor sandbox asks runsc whether its container still runs (`runsc state`, a
 * process start per command otherwise): only after a command ended violently, the one way the
 * container can stop inside a live sandbox. runsc is a stand-in script here that logs what it is
 * asked and answers `state` from a file, so the test can say what runsc was asked; the real runsc
 * behind the same class is exercised by limits.test.ts (the memory limit kills a command, the
 * next one runs) and gvisor-faults.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GvisorSandbox } from '../../src/sandbox/runner/runtimes/gvisor-sandbox.ts';
import { SANDBOX_READY_LINE } from '../../src/sandbox/runner/runtimes/oci-spec.ts';

describe('the gVisor sandbox asks runsc about its container only after a violent end', () => {
  let scratch: string;
  let sandbox: GvisorSandbox;
  const asked = () => readFileSync(join(scratch, 'asked'), 'utf8').trim().split('\n').map((line) => line.split(' ')[line.startsWith('--network') ? 1 : 0]);
  const containerStatus = (status: string) => writeFileSync(join(scratch, 'status'), status);

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'agentd-gvisor-state-'));
    const runsc = join(scratch, 'runsc');
    writeFileSync(join(scratch, 'asked'), '');
    containerStatus('running');
    writeFileSync(runsc, `#!/bin/sh
echo "$*" >> '${scratch}/asked'
case " $* " in
  *" run "*) echo ${SANDBOX_READY_LINE}; exec sleep 600 ;;
  *" state "*) printf '{"status":"%s"}' "$(cat '${scratch}/status')" ;;
esac
`);
    chmodSync(runsc, 0o755);
    mkdirSync(join(scratch, 'bundles'));
    writeFileSync(join(scratch, 'cgroup.procs'), '');
    sandbox = new GvisorSandbox({ directory: join(scratch, 'bundles'), state: join(scratch, 'state'), runsc: [runsc], tenantEntryFiles: [join(scratch, 'cgroup.procs')], spec: {} });
  });

  after(() => {
    sandbox.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('runs commands one after another in one container without asking, while each ends by itself', async () => {
    const first = await sandbox.containerId();
    sandbox.commandEnded(true);
    assert.equal(await sandbox.containerId(), first);
    sandbox.commandEnded(true);
    assert.equal(await sandbox.containerId(), first);
    assert.deepEqual(asked(), ['run']);
  });

  it('asks once after a violent end, and keeps a container that still runs', async () => {
    const current = await sandbox.containerId();
    sandbox.commandEnded(false);
    assert.equal(await sandbox.containerId(), current);
    assert.deepEqual(asked(), ['run', 'state']);
    sandbox.commandEnded(true);
    assert.equal(await sandbox.containerId(), current);
    assert.deepEqual(asked(), ['run', 'state'], 'not asked again until the next violent end');
  });

  it('starts a new container when runsc says the old one stopped', async () => {
    const stopped = await sandbox.containerId();
    containerStatus('stopped');
    sandbox.commandEnded(false);
    const next = await sandbox.containerId();
    assert.notEqual(next, stopped);
    assert.deepEqual(asked(), ['run', 'state', 'state', 'run']);
  });
});
