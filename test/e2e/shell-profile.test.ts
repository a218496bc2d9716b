import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useFakeServer } from '../support/harness.ts';
import { waitForTurn } from '../support/server.ts';

// Set before the server starts: tools take HOME from the server's environment.
const home = mkdtempSync(join(tmpdir(), 'agentd-home-'));
const PROFILE_SECRET = 'profile-exported-secret-4f1c';
for (const profile of ['.profile', '.bash_profile', '.bashrc']) writeFileSync(join(home, profile), `export PROFILE_CANARY=${PROFILE_SECRET}\n`);
const originalHome = process.env.HOME;
process.env.HOME = home;

describe('an approved shell string is not a login shell', () => {
  const harness = useFakeServer({ confinement: 'off' });
  after(() => {
    process.env.HOME = originalHome;
    rmSync(home, { recursive: true, force: true });
  });

  it('reads no profile, so nothing an operator exports there reaches the command', async () => {
    const session = await harness.newSession();
    harness.fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: 'echo "home=$HOME canary=[$PROFILE_CANARY]"' }), callId: 'call_profile' }] },
      { kind: 'reply', text: 'done' },
    );
    const turn = await harness.submit(session.id, 'go');
    await harness.resolve((await harness.nthRequestOf(turn.id, 1)).id, { decision: 'allow_once' });
    assert.equal((await waitForTurn(harness.server, turn.id)).status, 'completed');
    const output = harness.toolOutputSent('call_profile') ?? '';
    assert.match(output, new RegExp(`home=${home} canary=\\[\\]`));
    assert.ok(!output.includes(PROFILE_SECRET));
  });
});
