import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CANCEL_GRACE_MS, SandboxClient, type SandboxError } from '../../src/exec/sandbox-client.ts';
import { MAX_LINE_BYTES } from '../../src/sandbox/protocol.ts';
import { sandboxClient, scratchDirectory, shell, tenantGroupsOf } from '../sandbox/support.ts';

/** A stand-in runner: a tiny node script that misbehaves in one way. */
function brokenRunner(script: string): SandboxClient {
  const path = join(scratchDirectory('agentd-broken-runner-'), 'runner.mjs');
  writeFileSync(path, script);
  return new SandboxClient({ command: [process.execPath, path], readyTimeoutMs: 1500 });
}

const READY = `process.stdout.write(JSON.stringify({ type: 'ready', protocol: 1, workspace: '/workspace', limits: {}, cgroupVersion: 1 }) + '\\n');`;

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (error: SandboxError) => {
    assert.equal(error.code, code, error.message);
    return true;
  });
}

describe('the sandbox client against broken runners', () => {
  it('fails a runner that prints garbage instead of ready', async () => {
    const client = brokenRunner(`console.log('hello, I am not a sandbox'); setInterval(() => {}, 1000);`);
    await rejectsWith(client.call({ type: 'run', shell: 'true' }), 'sandbox_protocol_error');
    await client.close();
  });

  it('fails a runner that exits at start', async () => {
    const client = brokenRunner(`process.stderr.write('boom'); process.exit(3);`);
    await assert.rejects(client.call({ type: 'run', shell: 'true' }), /exit code 3\): boom/);
    await client.close();
  });

  it('gives up on a runner that hangs without ready', async () => {
    const client = brokenRunner(`setInterval(() => {}, 1000);`);
    const started = Date.now();
    await rejectsWith(client.start(), 'sandbox_start_timeout');
    // about time: the ready timeout is 1.5 s; 5 s leaves a loaded machine 3.5 s yet fails a client that waits on
    assert.ok(Date.now() - started < 5000);
    await client.close();
  });

  it('fails every pending call when a line is over the bound, and restarts on the next use', async () => {
    const marker = join(scratchDirectory(), 'starts');
    const client = brokenRunner(`
      import { appendFileSync } from 'node:fs';
      appendFileSync(${JSON.stringify(marker)}, 'x');
      ${READY}
      process.stdin.once('data', () => process.stdout.write('x'.repeat(${MAX_LINE_BYTES + 10})));
      setInterval(() => {}, 1000);`);
    const calls = [client.call({ type: 'run', shell: 'a' }), client.call({ type: 'run', shell: 'b' })];
    for (const call of calls) await rejectsWith(call, 'sandbox_protocol_error');
    await rejectsWith(client.call({ type: 'run', shell: 'c' }), 'sandbox_protocol_error');
    assert.equal((await import('node:fs')).readFileSync(marker, 'utf8'), 'xx', 'a fresh runner for the next call');
    await client.close();
  });

  it('sends a call made after the runner died, before its death is reported, to a fresh runner', async () => {
    const marker = join(scratchDirectory(), 'starts');
    // The runner leaves a child holding its output pipes, so its death is reported only after the
    // pipes' grace; the call in between must not go to the dead runner.
    const client = brokenRunner(`
      import { appendFileSync } from 'node:fs';
      import { spawn } from 'node:child_process';
      appendFileSync(${JSON.stringify(marker)}, 'x');
      spawn('sleep', ['2'], { stdio: ['ignore', 'inherit', 'inherit'] }).unref();
      ${READY}
      process.stdin.on('data', (line) => {
        const { id } = JSON.parse(String(line));
        process.stdout.write(JSON.stringify({ type: 'result', id, ok: true, exitCode: 0 }) + '\\n');
      });`);
    await client.call({ type: 'run', shell: 'first' });
    const dead = client.runnerPid!;
    process.kill(dead, 'SIGKILL');
    while (existsSync(`/proc/${dead}`)) await new Promise((resolve) => setTimeout(resolve, 5));
    const result = await client.call({ type: 'run', shell: 'second' });
    assert.equal(result.ok, true);
    assert.notEqual(client.runnerPid, dead);
    assert.equal((await import('node:fs')).readFileSync(marker, 'utf8'), 'xx', 'a fresh runner took the call');
    await client.close();
  });

  it('fails a pending call when the runner dies mid-call', async () => {
    const client = brokenRunner(`${READY} process.stdin.once('data', () => process.exit(9)); setInterval(() => {}, 1000);`);
    await rejectsWith(client.call({ type: 'run', shell: 'true' }), 'sandbox_died');
    await client.close();
  });

  it('kills a runner that does not end a cancelled call in time, so a cancel never waits on it', async () => {
    // reads requests (a cancel included) and never answers any of them
    const received = join(scratchDirectory(), 'received');
    const client = brokenRunner(`
      import { appendFileSync } from 'node:fs';
      ${READY}
      process.stdin.on('data', (chunk) => appendFileSync(${JSON.stringify(received)}, chunk));
      setInterval(() => {}, 1000);`);
    const controller = new AbortController();
    const call = client.call({ type: 'run', shell: 'sleep 100' }, { signal: controller.signal });
    while (!existsSync(received)) await new Promise((resolve) => setTimeout(resolve, 20));
    const abortedAt = Date.now();
    controller.abort();
    await rejectsWith(call, 'sandbox_cancel_timeout');
    assert.ok(Date.now() - abortedAt >= CANCEL_GRACE_MS - 100, 'the runner had its grace first');
    await client.close();
  });

  it('ends a call cancelled while the runner starts without sending it', async () => {
    const received = join(scratchDirectory(), 'received');
    const client = brokenRunner(`
      import { appendFileSync, existsSync } from 'node:fs';
      const go = ${JSON.stringify(received)} + '.ready';
      const timer = setInterval(() => {
        if (!existsSync(go)) return;
        clearInterval(timer);
        ${READY}
      }, 10);
      process.stdin.on('data', (chunk) => appendFileSync(${JSON.stringify(received)}, chunk));
      setInterval(() => {}, 1000);`);
    const controller = new AbortController();
    const call = client.call({ type: 'run', shell: 'sleep 100' }, { signal: controller.signal });
    controller.abort(); // the runner has not said ready yet
    writeFileSync(`${received}.ready`, '');
    await assert.rejects(call, { name: 'AbortError' });
    assert.equal(existsSync(received), false, 'nothing was sent');
    await client.close();
  });

  it('fails on a result for a request nobody sent', async () => {
    const client = brokenRunner(`${READY} process.stdin.once('data', () => console.log(JSON.stringify({ type: 'result', id: 'nobody', ok: true }))); setInterval(() => {}, 1000);`);
    await rejectsWith(client.call({ type: 'run', shell: 'true' }), 'sandbox_protocol_error');
    await client.close();
  });
});

describe('the sandbox client against the real runner', () => {
  it('answers a protocol error for a bad request and keeps serving', async () => {
    const client = sandboxClient(scratchDirectory());
    await rejectsWith(client.call({ type: 'run', shell: 'true', timeoutMs: -5 } as never), 'sandbox_request_rejected');
    assert.equal((await shell(client, 'echo fine')).output, 'fine\n');
    await client.close();
  });

  it('bin/agentd-sandbox (the shipped, compiled runner) answers', async () => {
    const bin = new URL('../../bin/agentd-sandbox', import.meta.url).pathname;
    const client = new SandboxClient({ command: [bin, '--workspace', scratchDirectory()], env: { PATH: process.env.PATH } });
    assert.equal((await client.start()).type, 'ready');
    assert.equal((await shell(client, 'echo shipped')).output, 'shipped\n');
    await client.close();
  });

  it('close ends the runner and everything it started', async () => {
    const client = sandboxClient(scratchDirectory());
    let output = '';
    const running = client.call({ type: 'run', shell: 'sleep 300 & echo started; wait' }, { onOutput: (_s, data) => (output += data) });
    while (!output.includes('started')) await new Promise((resolve) => setTimeout(resolve, 20));
    const pid = client.runnerPid!;
    const group = tenantGroupsOf(pid).pids;
    assert.ok(existsSync(group));
    await client.close();
    assert.equal((await running).outcome?.cancelled, true, 'the shutdown cancelled it');
    assert.equal(existsSync(`/proc/${pid}`), false, 'runner gone');
    assert.equal(existsSync(group), false, 'its cgroup (and every member) gone');
  });

  it('treats a request line over the bound as a protocol error and restarts the runner', async () => {
    const client = sandboxClient(scratchDirectory());
    await assert.rejects(client.call({ type: 'run', shell: 'x'.repeat(MAX_LINE_BYTES) }), /protocol error: a request line is longer than/);
    assert.equal((await shell(client, 'echo restarted')).output, 'restarted\n');
    await client.close();
  });
});
