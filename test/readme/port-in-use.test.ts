/** `agentd serve` on a port something else holds: agentd's words (which port, which flag), exit 2, not Node's EADDRINUSE. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = new URL('../../bin/agentd.js', import.meta.url).pathname;

it('a port in use is named, with --port to pick another, and exit status 2', async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as { port: number };
  const dir = mkdtempSync(join(tmpdir(), 'agentd-port-in-use-'));
  try {
    const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port), '--state-dir', dir, '--workspace-root', dir], { env: { PATH: process.env.PATH, HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const [code] = await once(child, 'exit');
    assert.equal(code, 2, stderr);
    assert.equal(stderr, `agentd: port ${port} is in use; pick another with --port (or stop what listens there)\n`);
  } finally {
    holder.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
