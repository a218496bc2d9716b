import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { useFakeServer } from '../support/harness.ts';

// The example imports `agentd/client`, the package's own export of dist/: run `npm run build` first.
const EXAMPLE = fileURLToPath(new URL('../../examples/sdk-turn.mjs', import.meta.url));

describe('examples/sdk-turn.mjs against a real server', () => {
  const harness = useFakeServer();

  it('prints the streamed answer, asks the approval on stdin, and the answer it is given resolves it', async () => {
    harness.fake.enqueue(
      { kind: 'reply', text: 'Making the file now.', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'example.txt'] }), callId: 'call_touch' }], chunkDelayMs: 5 },
      { kind: 'reply', text: 'The file is there.', chunkDelayMs: 5 },
    );
    const child = spawn(process.execPath, [EXAMPLE, 'make a file'], {
      cwd: harness.server.workspace,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, AGENTD_URL: harness.server.url },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let answered = false;
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      // The script asks "<prompt>\nallow_once / allow_session / deny? ": answer only once asked,
      // so the file cannot exist before the approval.
      if (!answered && /allow_once \/ allow_session \/ deny\? $/.test(stdout)) {
        answered = true;
        assert.equal(existsSync(join(harness.server.workspace, 'example.txt')), false, 'nothing ran before the answer');
        child.stdin.write('allow_once\n');
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearTimeout(timer);

    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.ok(answered, `the script asked for the approval:\n${stdout}`);
    assert.match(stdout, /Making the file now\./);
    assert.match(stdout, /touch example\.txt/, 'the approval prompt names the command');
    assert.match(stdout, /The file is there\.\n\[completed\]\n$/);
    assert.equal(existsSync(join(harness.server.workspace, 'example.txt')), true, 'the approval the script sent let the command run');
    const { data: requests } = (await harness.server.request('GET', '/v1/requests')).json;
    assert.deepEqual(requests, [], 'no request is left waiting');
    const { data: turns } = (await harness.server.request('GET', '/v1/turns')).json;
    assert.equal(turns[0].status, 'completed');
  });
});
