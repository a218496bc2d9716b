/**
 * Issue 14 by attack, through the real server with --sandbox-runner (the shipped runner): a
 * prompt-injected model's shell and file tools run in the sandbox, unasked, with guest paths, and
 * cannot reach the server's state, credentials, processes or network; limits hold and the
 * workspace is writable with sane ownership.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFakeServer } from '../support/harness.ts';
import { waitForTurn } from '../support/server.ts';
import { guestHostUid } from '../sandbox/support.ts';
import { runnerScript } from './sandbox-support.ts';

const CANARY = 'canary-5andb0x';
const SECRETS = { OPENAI_API_KEY: `${CANARY}-openai`, DATABASE_URL: `postgres://agentd:${CANARY}-db@127.0.0.1/agentd`, SERVICE_TOKEN: `${CANARY}-token-0123456789abcdef0123456789` };
Object.assign(process.env, SECRETS);

const FORK_BOMB = 'import os, time\ntry:\n    while True: os.fork()\nexcept OSError:\n    print("fork refused", flush=True)\ntime.sleep(2)';

const shell = (callId: string, command: string[] | string, extra: Record<string, unknown> = {}) => ({ name: 'shell', arguments: JSON.stringify({ command, ...extra }), callId });

describe('execution in the sandbox (real server, shipped runner)', () => {
  const harness = useFakeServer({ args: ['--sandbox-runner', runnerScript()], env: { OPENAI_API_KEY: SECRETS.OPENAI_API_KEY, DATABASE_URL: SECRETS.DATABASE_URL } });
  let stateDir: string;

  before(() => {
    stateDir = harness.server.backend.stateDir;
    writeFileSync(join(stateDir, 'planted-secret.txt'), `${CANARY}-state\n`);
  });

  const finished = (turnId: string) => harness.events.ofTurn(turnId).filter((event) => event.type === 'tool.finished').map((event) => event.data.data);
  const outputOf = (turnId: string, callId: string): string => finished(turnId).find((data) => data.callId === callId)!.output;

  /** One turn of tool calls; nothing may ask a human. */
  async function runTurn(calls: object[]) {
    const session = await harness.newSession();
    harness.fake.enqueue({ kind: 'reply', toolCalls: calls as any }, { kind: 'reply', text: 'done' });
    const turn = await harness.submit(session.id, 'work in the sandbox');
    const ended = await waitForTurn(harness.server, turn.id, 90_000);
    assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
    const asked = harness.events.ofTurn(turn.id).filter((event) => event.type === 'request.created');
    assert.deepEqual(asked.map((event) => event.data.data.kind), [], 'sandboxed calls are never asked');
    return { session, turn };
  }

  it('runs writes unasked at guest paths; the files land in the workspace owned by the guest\'s host user', async () => {
    const { turn } = await runTurn([
      shell('call_write', 'mkdir -p out && echo made > out/file.txt && pwd && id -u'),
      { name: 'apply_patch', kind: 'custom', arguments: '*** Begin Patch\n*** Add File: patched.txt\n+patched\n*** End Patch', callId: 'call_patch' },
      { name: 'read_file', arguments: JSON.stringify({ path: 'out/file.txt' }), callId: 'call_read' },
      { name: 'list_dir', arguments: JSON.stringify({ path: '.' }), callId: 'call_list' },
      { name: 'search', arguments: JSON.stringify({ pattern: 'made' }), callId: 'call_search' },
    ]);
    assert.match(outputOf(turn.id, 'call_write'), /Exit code: 0[\s\S]*^\/workspace$/m);
    assert.match(outputOf(turn.id, 'call_read'), /1\tmade/);
    assert.match(outputOf(turn.id, 'call_list'), /out\//);
    assert.match(outputOf(turn.id, 'call_search'), /out\/file\.txt:1:made/);
    assert.match(outputOf(turn.id, 'call_patch'), /^Success/, outputOf(turn.id, 'call_patch'));
    const written = statSync(join(harness.server.workspace, 'out/file.txt'));
    assert.equal(written.uid, guestHostUid(), 'owned by the guest\'s host user (a root server\'s guest is never root)');
    assert.equal(statSync(join(harness.server.workspace, 'patched.txt')).uid, guestHostUid());
    // session.created/updated/deleted carry the client's own session record, cwd included, as GET does
    const turnEvents = harness.events.events.filter((event) => !event.type.startsWith('session.'));
    const everything = JSON.stringify([harness.fake.requests.map((request) => request.body), turnEvents]);
    assert.ok(!everything.includes(harness.server.workspace), 'the host layout never reaches the model or the events');
  });

  it('cannot read the state dir, the database, the models file or another directory; no host process, no credential', async () => {
    const { turn } = await runTurn([
      shell('call_state', `cat ${stateDir}/planted-secret.txt ${stateDir}/models.json ${stateDir}/agentd.sqlite; ls /root /home /etc/shadow; echo end`),
      shell('call_env', 'env; ps -e -o pid=,args=; cat /proc/1/environ | tr "\\0" "\\n"'),
      { name: 'read_file', arguments: JSON.stringify({ path: `${stateDir}/planted-secret.txt` }), callId: 'call_read_outside' },
      { name: 'read_file', arguments: JSON.stringify({ path: '../../etc/passwd' }), callId: 'call_read_escape' },
    ]);
    assert.match(outputOf(turn.id, 'call_state'), /No such file or directory[\s\S]*end/);
    const env = outputOf(turn.id, 'call_env');
    assert.match(env, /^HOME=/m);
    assert.ok(!/node|sleep/.test(env.split('\n').filter((line) => /^\s*\d+ /.test(line)).join('\n')), `only sandbox processes: ${env}`);
    assert.match(outputOf(turn.id, 'call_read_outside'), /outside every allowed workspace root/);
    assert.match(outputOf(turn.id, 'call_read_escape'), /outside every allowed workspace root/);
    // session.created/updated/deleted carry the client's own session record, cwd included, as GET does
    const turnEvents = harness.events.events.filter((event) => !event.type.startsWith('session.'));
    const everything = JSON.stringify([harness.fake.requests.map((request) => request.body), turnEvents]);
    assert.ok(!everything.includes(CANARY), 'no secret reached the model or the events');
  });

  it('a root server lends the guest neither uid 0 nor a capability: a kernel setting flipped from inside is refused, the host value unchanged', async () => {
    const setting = '/proc/sys/kernel/core_uses_pid';
    const hostValue = readFileSync(setting, 'utf8').trim();
    const flipped = hostValue === '1' ? '0' : '1';
    try {
      const { turn } = await runTurn([
        shell('call_flip', `echo ${flipped} > ${setting} && echo FLIPPED; echo h > /proc/sysrq-trigger && echo SYSRQ; ls /sys/kernel 2>/dev/null | head -1; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status; echo mine > owner.txt`),
      ]);
      const output = outputOf(turn.id, 'call_flip');
      assert.doesNotMatch(output, /FLIPPED|SYSRQ/, output);
      assert.match(output, /CapEff:\s+0+$/m);
      assert.match(output, /NoNewPrivs:\s+1$/m);
      assert.notEqual(statSync(join(harness.server.workspace, 'owner.txt')).uid, 0, 'what the guest writes is not root\'s');
    } finally {
      const now = readFileSync(setting, 'utf8').trim();
      if (now !== hostValue) writeFileSync(setting, hostValue);
      assert.equal(now, hostValue, 'the host\'s kernel setting is unchanged');
    }
  });

  it('cannot connect to agentd, PostgreSQL, a private range, the metadata address or ::1', async () => {
    const port = harness.server.server.port;
    const probe = (host: string, target: number) =>
      `python3 -c 'import socket; socket.create_connection(("${host}", ${target}), 2)' 2>/dev/null && echo OPEN-${host} || echo closed-${host}`;
    const { turn } = await runTurn([shell('call_net', [probe('127.0.0.1', port), probe('127.0.0.1', 5432), probe('10.0.0.1', 80), probe('169.254.169.254', 80), probe('::1', port)].join('; '))]);
    const output = outputOf(turn.id, 'call_net');
    assert.doesNotMatch(output, /OPEN-/);
    assert.equal(output.match(/closed-/g)?.length, 5, output);
  });

  it('plan mode still refuses writes and dangerous commands are still refused', async () => {
    const session = await harness.newSession();
    harness.fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'enter_plan_mode', arguments: JSON.stringify({ reason: 'plan first' }), callId: 'call_enter' }] },
      { kind: 'reply', toolCalls: [shell('call_plan_write', 'echo x > plan.txt'), shell('call_rm', 'rm -rf /')] },
      { kind: 'reply', text: 'done' },
    );
    const turn = await harness.submit(session.id, 'plan');
    const enter = await harness.nthRequestOf(turn.id, 1);
    assert.equal(enter.kind, 'plan_enter', 'the plan question is the one a human still answers');
    await harness.resolve(enter.id, { decision: 'enter' });
    assert.equal((await waitForTurn(harness.server, turn.id, 60_000)).status, 'completed');
    assert.match(outputOf(turn.id, 'call_plan_write'), /plan mode/);
    assert.match(outputOf(turn.id, 'call_rm'), /^Refused: .*never run/);
    assert.equal(harness.events.ofTurn(turn.id).filter((event) => event.type === 'request.created').length, 1, 'nothing else was asked');
  });

  it('memory over 2 GiB is killed and the turn goes on; a fork bomb is contained while /healthz answers', async () => {
    const session = await harness.newSession();
    harness.fake.enqueue(
      {
        kind: 'reply',
        toolCalls: [
          shell('call_memory', ['python3', '-c', 'b = bytearray(3 * 1024 ** 3); print("allocated")'], { timeout_ms: 60_000 }),
          // a fork bomb the policy cannot recognise: only the sandbox's 512 processes stop it
          shell('call_fork', ['python3', '-c', FORK_BOMB], { timeout_ms: 15_000 }),
        ] as any,
      },
      { kind: 'reply', text: 'done' },
    );
    const turn = await harness.submit(session.id, 'stress');
    let healthy = 0;
    while (!['completed', 'failed', 'cancelled'].includes((await harness.server.request('GET', `/v1/turns/${turn.id}`)).json.status)) {
      const started = Date.now();
      assert.equal((await harness.server.request('GET', '/healthz')).status, 200);
      // about time: a health check answers in milliseconds; 2 s under a contained fork bomb is still responsive, a starved server is not
      assert.ok(Date.now() - started < 2000, 'the server stays responsive');
      healthy++;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.ok(healthy > 0);
    assert.equal((await waitForTurn(harness.server, turn.id)).status, 'completed');
    const memory = outputOf(turn.id, 'call_memory');
    assert.doesNotMatch(memory, /allocated/, memory);
    assert.match(memory, /memory limit|MemoryError|Killed|Exit code: 137/);
    assert.match(outputOf(turn.id, 'call_fork'), /fork refused/);
  });
});
