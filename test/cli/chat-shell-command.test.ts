import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeProviderModels } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { chatCommand } from './chat-support.ts';

/** Runs the chat with piped stdin and stdout, feeding it lines; resolves at exit (SIGKILL after two minutes). */
async function runPiped(args: string[], cwd: string, lines: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [command, ...rest] = chatCommand(args);
  const child = spawn(command, rest, { cwd, env: { PATH: process.env.PATH, HOME: cwd }, stdio: ['pipe', 'pipe', 'pipe'] });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk) => (output.stdout += chunk));
  child.stderr.on('data', (chunk) => (output.stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  child.stdin.end(lines.map((line) => `${line}\n`).join(''));
  const code = await new Promise<number | null>((resolve) => child.on('exit', (exit) => (clearTimeout(timer), resolve(exit))));
  return { code, ...output };
}

describe('agentd chat: a !command line', () => {
  let fake: FakeProvider;
  let workspace: string;
  let stateDir: string;
  before(async () => {
    fake = await startFakeProvider();
    workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-chat-bang-ws-')));
    stateDir = mkdtempSync(join(tmpdir(), 'agentd-chat-bang-state-'));
    writeFileSync(join(stateDir, 'models.json'), JSON.stringify(fakeProviderModels(fake.baseUrl)));
  });
  after(async () => {
    await fake.close();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('runs the command in the session cwd, shows its output, and only the next line asks the model', async () => {
    writeFileSync(join(workspace, 'marker-file.txt'), 'x');
    fake.enqueue({ kind: 'reply', text: 'saw the listing' });
    const before = fake.requests.length;
    const { code, stdout, stderr } = await runPiped(['--models-file', join(stateDir, 'models.json'), '--state-dir', stateDir], workspace, ['!ls', 'what is there?']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /marker-file\.txt/);
    assert.match(stdout, /^saw the listing$/m);
    assert.equal(fake.requests.length, before + 1, 'the command asked the model nothing');
    assert.ok(JSON.stringify(fake.requests.at(-1)!.body.input).includes('marker-file.txt'), 'the next request carries the output');
  });
});
