import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { useFakeServer } from '../support/harness.ts';
import { readMarkdown } from '../docs/markdown.ts';

const REPOSITORY = fileURLToPath(new URL('../..', import.meta.url));
const README_ADDRESS = 'http://127.0.0.1:4096';

/** The README's SDK block: the ```ts fence that imports agentd/client. */
function readmeSdkBlock(): string {
  const block = readMarkdown(`${REPOSITORY}README.md`).fences.find((fence) => fence.info === 'ts' && fence.content.includes("from 'agentd/client'"));
  assert.ok(block, 'README.md shows the SDK in a ts block importing agentd/client');
  return block.content;
}

describe("README's SDK block runs as written", () => {
  const harness = useFakeServer();

  it('streams the answer and prints the result (only the address changed; agentd/client is the built package)', async () => {
    const code = readmeSdkBlock().replaceAll(README_ADDRESS, harness.server.url);
    harness.fake.enqueue({ kind: 'reply', text: 'Hello from the README turn.', chunkDelayMs: 2 });
    // An ES module evaluated in the repository resolves `agentd/client` as the package's own export.
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: REPOSITORY, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const exitCode = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearTimeout(timer);
    assert.equal(exitCode, 0, stderr);
    assert.equal(stdout, 'Hello from the README turn.Hello from the README turn.\n', 'the streamed deltas, then the result');
  });
});
