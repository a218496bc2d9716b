// Issue 17 §2, bounded: a few SIGKILL rounds of the real agentd process (dist/, built by
// `npm test`) on both backends; scripts/soak.ts runs hundreds (docs/RELIABILITY.md).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { runCrashRounds } from './support/crash-rounds.ts';

const ROUNDS = Number(process.env.AGENTD_CRASH_ROUNDS ?? 3);

describe('crash consistency', () => {
  for (const backend of BACKENDS) {
    it(`${backend}: ${ROUNDS} SIGKILL rounds leave no active turn, no lost or doubled request, no orphan process`, async () => {
      const report = await runCrashRounds({ backend, rounds: ROUNDS });
      assert.deepEqual(report.violations, []);
      assert.equal(report.rounds, ROUNDS);
      assert.ok(report.accepted >= ROUNDS, `${report.accepted} turns were accepted`);
      assert.ok(report.interrupted >= 1, 'some kill caught a turn in flight');
      console.log(`${backend}: ${JSON.stringify({ ...report, violations: report.violations.length })}`);
    });
  }
});
