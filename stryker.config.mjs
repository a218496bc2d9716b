// Mutation testing of the guard modules (docs/RELIABILITY.md §9): `npm run mutation [guard ...]`.
// One guard at a time (AGENTD_MUTATION_GUARD, set by scripts/mutation.mjs): its module is mutated
// and only the test files that should catch a loosened guard run against each mutant.
import { GUARDS } from './scripts/mutation-guards.mjs';

const guard = GUARDS[process.env.AGENTD_MUTATION_GUARD ?? ''];
if (!guard) throw new Error(`AGENTD_MUTATION_GUARD must name one of: ${Object.keys(GUARDS).join(', ')}`);

export default {
  mutate: guard.modules,
  testRunner: 'tap',
  tap: {
    testFiles: guard.tests,
    nodeArgs: ['--import', 'tsx', '-r', '{{hookFile}}', '--test-reporter=tap', '{{testFile}}'],
    forceBail: true,
  },
  coverageAnalysis: 'all',
  concurrency: 1,
  // beyond the dry run's own time: a hanging mutant costs this much, so unit-level guards name a shorter one
  timeoutMS: guard.timeoutMS ?? 60_000,
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: `reports/mutation/${process.env.AGENTD_MUTATION_GUARD}.json` },
  tempDirName: '.stryker-tmp',
  // Stryker rewrites the named tsconfig through TypeScript's JavaScript API, which TypeScript 7 (the
  // native compiler) does not have; tsx needs no rewriting, so it is pointed at no file.
  tsconfigFile: 'no-tsconfig-to-rewrite.json',
  ignorePatterns: ['dist', 'reports', 'bench', 'examples', '.stryker-tmp'],
  cleanTempDir: 'always',
};
