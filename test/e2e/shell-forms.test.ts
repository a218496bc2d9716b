// CONTRACT.md §21 on a real shell: each form of test/support/shell-forms.ts, with a command whose
// harm is harmless (a marker file, mkfs on a scratch image file), is first run by bash itself to
// show it does the harm, then sent by the model through a real agentd turn under --yolo with a
// `deny touch *` rule: agentd refuses it and the harm is not done. Near misses run.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useFakeServer } from '../support/harness.ts';
import { waitForTurn } from '../support/server.ts';
import { COMPUTED_PROGRAMS, SHELL_FORMS } from '../support/shell-forms.ts';

const rulesFile = join(mkdtempSync(join(tmpdir(), 'agentd-forms-e2e-')), 'permissions.json');
writeFileSync(rulesFile, JSON.stringify({ rules: [{ tool: 'shell', pattern: 'touch *', action: 'deny' }] }));
const PATH = `${process.env.PATH}:/usr/sbin:/sbin`;
const IMAGE_BYTES = 1 << 20;
const RUNNABLE = SHELL_FORMS.filter((form) => !form.policyOnly);

/**
 * Runs `line` with bash in a fresh directory holding a zeroed scratch.img; returns that directory.
 * Asynchronously: the server under test shares this process.
 */
async function runByBash(line: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-forms-bash-'));
  writeFileSync(join(dir, 'scratch.img'), Buffer.alloc(IMAGE_BYTES));
  const child = promisify(execFile)('bash', ['--norc', '--noprofile', '-c', line], { cwd: dir, env: { PATH, HOME: dir }, timeout: 20_000 });
  child.child.stdin?.end();
  await child.catch(() => undefined); // some forms end with a non-zero status; only their effect counts
  return dir;
}

/** mkfs.ext4 writes the ext4 magic (0xEF53) at byte 1080 of the image. */
function formatted(image: string): boolean {
  return readFileSync(image).readUInt16LE(1080) === 0xef53;
}

const call = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('§21 forms on a real shell through a real turn (--yolo, deny touch *)', () => {
  const harness = useFakeServer({ args: ['--yolo', '--permissions-file', rulesFile] });

  async function runTurn(commands: string[]): Promise<string[]> {
    const { fake, server } = harness;
    const session = await harness.newSession();
    fake.enqueue({ kind: 'reply', toolCalls: commands.map((command, index) => call(`call_${index}`, command)) }, { kind: 'reply', text: 'ok' });
    const turn = await harness.submit(session.id, 'run these');
    assert.equal((await waitForTurn(server, turn.id, 60_000)).status, 'completed');
    return commands.map((_, index) => harness.toolOutputSent(`call_${index}`) ?? '');
  }

  it('each form of a denied command is refused and makes no marker file, though bash alone makes it', async () => {
    const lines = RUNNABLE.map((form, index) => form.wrap(`touch made-${index}.txt`));
    for (const [index, line] of lines.entries()) {
      const dir = await runByBash(line);
      assert.ok(existsSync(join(dir, `made-${index}.txt`)), `bash runs the command of ${RUNNABLE[index].name}: ${JSON.stringify(line)}`);
      rmSync(dir, { recursive: true, force: true });
    }
    const outputs = await runTurn(lines);
    for (const [index, output] of outputs.entries()) {
      assert.match(output, /pattern "touch \*"/, `${RUNNABLE[index].name}: ${JSON.stringify(lines[index])}`);
      assert.equal(existsSync(join(harness.server.workspace, `made-${index}.txt`)), false, RUNNABLE[index].name);
    }
  });

  it('a program computed at run time is refused and makes no marker file, though bash alone makes it', async () => {
    const runnable = COMPUTED_PROGRAMS.filter(({ name }) => !name.startsWith('parallel'));
    const lines = runnable.map(({ line }, index) => line('touch', `computed-${index}.txt`));
    for (const [index, line] of lines.entries()) {
      const dir = await runByBash(line);
      assert.ok(existsSync(join(dir, `computed-${index}.txt`)), `bash runs ${JSON.stringify(line)}`);
      rmSync(dir, { recursive: true, force: true });
    }
    const outputs = await runTurn(lines);
    for (const [index, output] of outputs.entries()) {
      assert.match(output, /^Refused: /, lines[index]);
      assert.equal(existsSync(join(harness.server.workspace, `computed-${index}.txt`)), false, lines[index]);
    }
  });

  it('mkfs on a scratch image is refused in every form, yolo notwithstanding: the image stays zeroed, though bash alone formats it', async () => {
    const lines = RUNNABLE.map((form) => form.wrap('mkfs.ext4 -F -q scratch.img'));
    for (const [index, line] of lines.entries()) {
      const dir = await runByBash(line);
      assert.ok(formatted(join(dir, 'scratch.img')), `bash formats the image through ${RUNNABLE[index].name}`);
      rmSync(dir, { recursive: true, force: true });
    }
    const image = join(harness.server.workspace, 'scratch.img');
    writeFileSync(image, Buffer.alloc(IMAGE_BYTES));
    const outputs = await runTurn(lines);
    for (const [index, output] of outputs.entries()) assert.match(output, /destroy the machine/, `${RUNNABLE[index].name}: ${JSON.stringify(lines[index])}`);
    assert.equal(formatted(image), false);
  });

  it('near misses run: git status, ls | wc -l, a for loop over echo, a look-alike of the denied command', async () => {
    const outputs = await runTurn(['git status; echo status-ran', 'ls | wc -l', 'for w in alpha beta; do echo "loop-$w"; done', 'echo touch made.txt', 'mkdir look-alike']);
    assert.match(outputs[0], /status-ran/);
    assert.match(outputs[1], /^\d+|\n\d+/);
    assert.match(outputs[2], /loop-alpha[\s\S]*loop-beta/);
    assert.match(outputs[3], /touch made\.txt/);
    assert.ok(existsSync(join(harness.server.workspace, 'look-alike')));
  });
});
