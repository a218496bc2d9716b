// Runs the tests with node's test runner, through tsx:
//   node scripts/run-tests.mjs              every test/**/*.test.ts (the runner expands the glob)
//   node scripts/run-tests.mjs e2e mcp      only the files whose path contains "e2e" or "mcp"
import { globSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const ALL_TESTS = 'test/**/*.test.ts';

const filters = process.argv.slice(2);
const files = filters.length === 0 ? [ALL_TESTS] : globSync(ALL_TESTS).filter((file) => filters.some((part) => file.includes(part))).sort();
if (files.length === 0) {
  console.error(`no test file under test/ has ${filters.map((part) => `"${part}"`).join(' or ')} in its path`);
  process.exit(1);
}
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=120000', ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
