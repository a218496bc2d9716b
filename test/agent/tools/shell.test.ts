import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { createShellTool, MAX_SHELL_TIMEOUT_MS } from '../../../src/agent/tools/shell.ts';
import { createProcessGroupRunner, groupIsAlive, processIsAlive, type CommandRunner } from '../../../src/exec/process-group.ts';
import { ToolError } from '../../../src/agent/tools/types.ts';
import { makeContext, makeWorkspace, type TestContext } from './context.ts';

const shell = createShellTool();

function call(input: object) {
  return shell.parse(JSON.stringify(input));
}

/** Waits until the streamed output contains every `name=<pid>` line asked for, and returns the pids. */
async function streamedPids(ctx: TestContext, names: string[]): Promise<Record<string, number>> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const text = ctx.streamed.join('');
    const found = Object.fromEntries(names.map((name) => [name, Number(new RegExp(`${name}=(\\d+)`).exec(text)?.[1])]));
    if (names.every((name) => found[name] > 0)) return found;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`pids never appeared in ${JSON.stringify(ctx.streamed.join(''))}`);
}

test('an argv command runs directly and its output is streamed and returned', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const ctx = makeContext(ws);
  const outcome = await shell.run(call({ command: ['echo', 'hello $HOME'] }), ctx);
  assert.equal(outcome.ok, true);
  assert.match(outcome.output, /^Exit code: 0$/m);
  assert.match(outcome.output, /hello \$HOME/);
  assert.match(ctx.streamed.join(''), /hello \$HOME/);
});

test('a string command runs in bash with stdout, stderr and the exit code reported', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const outcome = await shell.run(call({ command: 'echo out; echo err >&2; exit 3' }), makeContext(ws));
  assert.equal(outcome.ok, false);
  assert.match(outcome.output, /^Exit code: 3$/m);
  assert.match(outcome.output, /out/);
  assert.match(outcome.output, /err/);
});

test('workdir is relative to the session cwd and must stay inside a root', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  mkdirSync(path.join(ws.cwd, 'sub'));
  const outcome = await shell.run(call({ command: ['pwd'], workdir: 'sub' }), makeContext(ws));
  assert.match(outcome.output, new RegExp(`${path.join(ws.cwd, 'sub')}$`, 'm'));
  await assert.rejects(shell.run(call({ command: ['pwd'], workdir: '../../..' }), makeContext(ws)), ToolError);
  await assert.rejects(shell.run(call({ command: ['pwd'], workdir: 'missing' }), makeContext(ws)), ToolError);
});

test('commands get the allowlisted environment, never the server\'s secrets', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const tool = createShellTool({
    baseEnvironment: {
      PATH: process.env.PATH,
      LANG: 'C.UTF-8',
      SERVICE_TOKEN: 'canary-s1',
      OPENAI_API_KEY: 'canary-s2',
      AWS_SECRET_ACCESS_KEY: 'canary-s3',
      DATABASE_URL: 'postgres://user:canary-s4@db/agentd',
      LOCAL_MODEL_KEY: 'canary-s5',
      BASH_ENV: '/tmp/canary-s6',
    },
  });
  const outcome = await tool.run(tool.parse(JSON.stringify({ command: ['env'] })), makeContext(ws));
  assert.match(outcome.output, /^LANG=C\.UTF-8$/m);
  assert.match(outcome.output, /^GIT_TERMINAL_PROMPT=0$/m);
  assert.doesNotMatch(outcome.output, /canary/);
});

test('an unattended call asks its runner for the read-only view, an approved one for the writable view', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const views: unknown[] = [];
  const runner: CommandRunner = async (request) => {
    views.push(request.view);
    return { exitCode: 0, signal: null, timedOut: false, aborted: false, strayProcessesStopped: false, spawnError: null, output: '', truncated: false, durationMs: 0 };
  };
  const tool = createShellTool({ runner });
  await tool.run(tool.parse('{"command":["ls"]}'), { ...makeContext(ws), unattended: true });
  await tool.run(tool.parse('{"command":["ls"]}'), { ...makeContext(ws), unattended: false });
  await tool.run(tool.parse('{"command":["ls"]}'), makeContext(ws));
  assert.deepEqual(views, [
    { writable: false, roots: [ws.root] },
    { writable: true, roots: [ws.root] },
    { writable: true, roots: [ws.root] },
  ]);
});

test('abort kills the whole process tree, grandchildren included', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const controller = new AbortController();
  const ctx = makeContext(ws, { signal: controller.signal });
  const running = shell.run(call({ command: ['bash', '-c', 'sleep 100 & echo bg=$!; echo leader=$$; sleep 100'] }), ctx);
  const pids = await streamedPids(ctx, ['bg', 'leader']);
  assert.equal(processIsAlive(pids.bg), true);
  controller.abort();
  const outcome = await running;
  assert.equal(outcome.ok, false);
  assert.match(outcome.output, /Aborted/);
  assert.equal(processIsAlive(pids.bg), false);
  assert.equal(processIsAlive(pids.leader), false);
  assert.equal(groupIsAlive(pids.leader), false, 'the foreground sleep is gone too');
});

test('a timeout kills the whole group and says so', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const ctx = makeContext(ws);
  const outcome = await shell.run(call({ command: 'sleep 100 & echo bg=$!; sleep 100', timeout_ms: 500 }), ctx);
  const pids = await streamedPids(ctx, ['bg']);
  assert.equal(outcome.ok, false);
  assert.match(outcome.output, /Timed out after 500 ms/);
  assert.equal(processIsAlive(pids.bg), false);
});

test('processes that ignore SIGTERM are killed with SIGKILL after the grace period', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const tool = createShellTool({ runner: createProcessGroupRunner({ killGraceMs: 300 }) });
  const controller = new AbortController();
  const ctx = makeContext(ws, { signal: controller.signal });
  const running = tool.run(tool.parse(JSON.stringify({ command: ['bash', '-c', 'trap "" TERM; sleep 100 & echo bg=$!; echo leader=$$; wait'] })), ctx);
  const pids = await streamedPids(ctx, ['bg', 'leader']);
  controller.abort();
  await running;
  assert.equal(processIsAlive(pids.bg), false);
  assert.equal(groupIsAlive(pids.leader), false);
});

test('background processes left behind by a finished command are stopped', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const ctx = makeContext(ws);
  const started = Date.now();
  const outcome = await shell.run(call({ command: 'sleep 100 & echo bg=$!' }), ctx);
  const pids = await streamedPids(ctx, ['bg']);
  // about time: the background sleep lasts 100 s; returning within 10 s shows the command did not wait for it
  assert.ok(Date.now() - started < 10_000);
  assert.match(outcome.output, /Exit code: 0/);
  assert.match(outcome.output, /Background processes it left running were stopped/);
  assert.equal(processIsAlive(pids.bg), false);
});

test('long output keeps its head and tail with a marker', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const tool = createShellTool({ runner: createProcessGroupRunner({ outputLimit: 1000 }) });
  const outcome = await tool.run(tool.parse(JSON.stringify({ command: ['seq', '1', '20000'] })), makeContext(ws));
  assert.equal(outcome.truncated, true);
  assert.match(outcome.output, /Output:\n1\n2\n3\n/);
  assert.match(outcome.output, /characters omitted/);
  assert.match(outcome.output, /19999\n20000\n$/);
  assert.ok(outcome.output.length < 1300);
});

test('a program that does not exist is reported, not thrown', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const outcome = await shell.run(call({ command: ['agentd-no-such-program'] }), makeContext(ws));
  assert.equal(outcome.ok, false);
  assert.match(outcome.output, /Failed to start the command: .*ENOENT/);
});

test('arguments are validated and the timeout is capped at the maximum', () => {
  assert.equal(call({ command: 'true', timeout_ms: 10_000_000 }).timeoutMs, MAX_SHELL_TIMEOUT_MS);
  assert.equal(call({ command: 'true' }).timeoutMs, 120_000);
  assert.throws(() => call({ command: '  ' }), ToolError);
  assert.throws(() => call({ command: [] }), ToolError);
  assert.throws(() => call({ command: 5 }), ToolError);
  assert.throws(() => call({ command: 'ls', timeout_ms: 0 }), ToolError);
  assert.throws(() => call({ command: 'ls', extra: 1 }), ToolError);
  assert.throws(() => shell.parse('{not json'), ToolError);
  assert.deepEqual(shell.plan(call({ command: ['ls'], workdir: 'src' }), { cwd: '/', roots: [] }), {
    readOnly: false,
    paths: ['src'],
    command: ['ls'],
  });
});

test('live streaming stops at its limit while the returned output stays complete up to its cap', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const tool = createShellTool({ runner: createProcessGroupRunner({ streamLimit: 100 }) });
  const ctx = makeContext(ws);
  const outcome = await tool.run(tool.parse(JSON.stringify({ command: ['seq', '1', '1000'] })), ctx);
  const streamed = ctx.streamed.join('');
  assert.match(streamed, /live output stopped/);
  assert.ok(streamed.length < 200);
  assert.match(outcome.output, /\n1000\n$/);
  assert.equal(outcome.truncated, false);
});

test('without confinement, an unattended string runs as its plain words and never reaches bash', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const unattended = { ...makeContext(ws), unattended: true };
  const echoed = await shell.run(call({ command: "echo 'a; touch pwned' \"$(id)\"" }), unattended).catch((error) => error);
  assert.ok(echoed instanceof ToolError, 'a string with an expansion is not plain words');
  const literal = await shell.run(call({ command: "echo 'x; touch pwned' plain" }), unattended);
  assert.match(literal.output, /^x; touch pwned plain$/m);
  assert.equal(existsSync(path.join(ws.cwd, 'pwned')), false);
  const approved = await shell.run(call({ command: 'echo $((6 * 7))' }), makeContext(ws));
  assert.match(approved.output, /^42$/m, 'an approved string still runs in bash');
});
