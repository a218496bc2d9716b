// Crash-consistency soak (issue 17 §2): SIGKILL rounds of the real agentd on both backends at once,
// invariants checked after each. Build first (`npm run build`), then:
//   node --import tsx scripts/soak.ts [--rounds 150] [--minutes 10]
// Prints one line per round and a summary; exits 1 on any violation.
import { parseArgs } from 'node:util';
import { runCrashRounds, type CrashReport } from '../test/reliability/support/crash-rounds.ts';
import type { BackendKind } from '../test/support/backends.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '150' }, minutes: { type: 'string', default: '10' }, backend: { type: 'string', multiple: true } } });
const rounds = Number(values.rounds);
const deadline = Date.now() + Number(values.minutes) * 60_000;
const backends = (values.backend ?? ['sqlite', 'postgres']) as BackendKind[];
const started = Date.now();

const reports = await Promise.all(
  backends.map(async (backend): Promise<[BackendKind, CrashReport]> => {
    const report = await runCrashRounds({
      backend,
      rounds,
      stopAt: deadline,
      onRound: (round, violations) => console.log(`${backend} round ${round}: ${violations.length === 0 ? 'ok' : violations.join('; ')}`),
    });
    return [backend, report];
  }),
);
console.log(`\nsoak finished in ${Math.round((Date.now() - started) / 1000)} s`);
let failed = false;
for (const [backend, report] of reports) {
  console.log(`${backend}: ${report.rounds} rounds, ${report.accepted} turns accepted, ${report.interrupted} caught in flight, ${report.toolProcessesKilled} tool processes alive at a kill (${report.survivorsEndedAtStart} outlived it and were ended by the next start), ${report.violations.length} violations`);
  for (const violation of report.violations) console.log(`  ${violation}`);
  failed ||= report.violations.length > 0;
}
process.exit(failed ? 1 : 0);
