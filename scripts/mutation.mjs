// `npm run mutation [guard ...]`: StrykerJS over each named guard (all of them by default), one
// after another at the lowest CPU priority; the scores go to reports/mutation/<guard>.json.
import { spawnSync } from 'node:child_process';
import { GUARDS } from './mutation-guards.mjs';

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in GUARDS));
if (unknown.length > 0) {
  console.error(`unknown guard ${unknown.join(', ')}; the guards are: ${Object.keys(GUARDS).join(', ')}`);
  process.exit(2);
}
let failed = false;
for (const guard of wanted.length > 0 ? wanted : Object.keys(GUARDS)) {
  console.log(`mutation: ${guard}`);
  const run = spawnSync('nice', ['-n', '19', process.execPath, 'node_modules/@stryker-mutator/core/bin/stryker.js', 'run', 'stryker.config.mjs'], {
    stdio: 'inherit',
    env: { ...process.env, AGENTD_MUTATION_GUARD: guard },
  });
  if (run.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
