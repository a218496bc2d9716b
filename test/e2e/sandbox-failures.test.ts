/**
 * Fail closed through the real server: a runner that disappears, crashes, hangs at start or speaks
 * garbage fails the call with a clear output and nothing runs on the host; a cancel kills the
 * sandboxed tree.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFakeServer } from '../support/harness.ts';
import { waitForStatus, waitForTurn } from '../support/server.ts';
import { scratchDirectory } from '../sandbox/support.ts';
import { processesWith, runnerScript, SHIPPED_RUNNER, waitUntil } from './sandbox-support.ts';


const marker = join(scratchDirectory('agentd-e2e-marker-'), 'ran-on-host');
const MARKER_COMMAND = `touch ${marker}; echo ran`;
/** Switched per test: what the runner script does when the server starts it. */
const mode = join(scratchDirectory('agentd-e2e-mode-'), 'mode');

describe('a failing sandbox fails the call, never the host', () => {
  const runner = runnerScript(`case "$(cat ${mode})" in
  garbage) echo "I am not a sandbox"; exec sleep 30 ;;
  crash) echo '{"type":"ready","protocol":1}'; read line; kill -SEGV $$ ;;
  hang) exec sleep 60 ;;
  missing) exec /nonexistent/agentd-sandbox "$@" ;;
  *) exec ${SHIPPED_RUNNER} "$@" ;;
esac`);
  const harness = useFakeServer({ args: ['--sandbox-runner', runner] });

  async function callOutput(command: string, timeoutMs = 60_000): Promise<string> {
    const session = await harness.newSession();
    harness.fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command }), callId: 'call_1' }] }, { kind: 'reply', text: 'done' });
    const turn = await harness.submit(session.id, 'run it');
    assert.equal((await waitForTurn(harness.server, turn.id, timeoutMs)).status, 'completed');
    return harness.events.ofTurn(turn.id).find((event) => event.type === 'tool.finished')!.data.data.output;
  }

  /**
   * Kills the live runner of the server (a death between calls), so the next call starts the mode's
   * one. It waits until the server has reaped the runner, not only until it is a zombie: a call
   * made before the server saw the death would go to the dead runner and report its SIGKILL.
   */
  async function dropLiveRunner(): Promise<void> {
    const live = processesWith('agentd-sandbox --workspace').filter((pid) => processesWith(harness.server.workspace).includes(pid));
    for (const pid of live) process.kill(pid, 'SIGKILL');
    await waitUntil(() => live.every((pid) => !existsSync(`/proc/${pid}`)));
  }

  const failures = { garbage: /did not begin with a ready line|not a JSON object/, crash: /ended \(signal SIGSEGV\)/, hang: /no ready line within/, missing: /ended \(exit code 127\)/ };
  for (const [failure, reason] of Object.entries(failures)) {
    it(`a runner that ${failure === 'missing' ? 'is missing at call time' : failure === 'hang' ? 'hangs at start' : failure === 'crash' ? 'crashes' : 'speaks garbage'}: a clear output, nothing on the host, a fresh sandbox next`, async () => {
      await dropLiveRunner();
      writeFileSync(mode, failure);
      const output = await callOutput(MARKER_COMMAND);
      assert.match(output, /the sandbox failed, nothing ran on the host/);
      assert.match(output, reason);
      assert.equal(existsSync(marker), false, 'the command never ran on the host');
      assert.ok(!output.includes(runner), 'the runner path is not shown to the model');
      writeFileSync(mode, 'real');
      assert.match(await callOutput('echo fresh'), /Exit code: 0[\s\S]*fresh/, 'the next call starts a fresh runner');
    });
  }

  it('a revert while the runner fails answers revert_unavailable, not a 500, and can be asked again', async () => {
    await dropLiveRunner();
    writeFileSync(mode, 'real');
    const session = await harness.newSession();
    harness.fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: 'echo made > made.txt' }), callId: 'call_made' }] }, { kind: 'reply', text: 'done' });
    const turn = await harness.submit(session.id, 'make a file');
    assert.equal((await waitForTurn(harness.server, turn.id, 60_000)).status, 'completed');
    await dropLiveRunner();
    writeFileSync(mode, 'crash');
    const refused = await harness.server.request('POST', `/v1/turns/${turn.id}/revert`);
    assert.equal(refused.status, 409, JSON.stringify(refused.json));
    assert.equal(refused.json.error.code, 'revert_unavailable');
    assert.match(refused.json.error.message, /could not be written back \(the (sandbox did not answer|write-back did not run in the sandbox)\)/);
    assert.ok(!refused.json.error.message.includes(runner), 'the runner path is not shown');
    await dropLiveRunner();
    writeFileSync(mode, 'real');
    const reverted = await harness.server.request('POST', `/v1/turns/${turn.id}/revert`);
    assert.equal(reverted.status, 200, JSON.stringify(reverted.json));
    assert.deepEqual(reverted.json.reverted, ['made.txt']);
  });

  it('a cancel mid-command kills the sandboxed process tree', async () => {
    writeFileSync(mode, 'real');
    const session = await harness.newSession();
    harness.fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: 'sleep 417 & sleep 418; wait' }), callId: 'call_sleep' }] }, { kind: 'reply', text: 'done' });
    const turn = await harness.submit(session.id, 'sleep');
    await harness.events.waitFor(() => harness.events.ofTurn(turn.id).some((event) => event.type === 'tool.updated'));
    await waitUntil(() => processesWith('sleep 418').length > 0, 30_000);
    assert.equal((await harness.server.request('POST', `/v1/turns/${turn.id}/cancel`)).status < 300, true);
    await waitForStatus(harness.server, turn.id, 'cancelled', 30_000);
    await waitUntil(() => processesWith('sleep 417').length === 0 && processesWith('sleep 418').length === 0, 10_000);
  });
});
