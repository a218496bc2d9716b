// Runs the tests with node's test runner, through tsx:
//   node scripts/run-tests.mjs              every test/**/*.test.ts (the runner expands the glob)
//   node scripts/run-tests.mjs e2e mcp      only the files whose path contains "e2e" or "mcp"
// Some tests run what the build ships (bin/agentd, bin/agentd-sandbox, dist/bundle/): when any
// source the build reads is newer than that output, the build runs first, so a test never runs
// code older than src/.
import { globSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const ALL_TESTS = 'test/**/*.test.ts';

const filters = process.argv.slice(2);
const files = filters.length === 0 ? [ALL_TESTS] : globSync(ALL_TESTS).filter((file) => filters.some((part) => file.includes(part))).sort();
if (files.length === 0) {
  console.error(`no test file under test/ has ${filters.map((part) => `"${part}"`).join(' or ')} in its path`);
  process.exit(1);
}
const BUILD_INPUTS = ['src/**/*', 'scripts/*', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];
const BUILD_OUTPUTS = ['dist/bundle/*.js'];

function modified(patterns) {
  return patterns.flatMap((pattern) => globSync(pattern)).map((file) => statSync(file)).filter((stats) => stats.isFile()).map((stats) => stats.mtimeMs);
}

const outputs = modified(BUILD_OUTPUTS);
if (outputs.length === 0 || Math.max(...modified(BUILD_INPUTS)) > Math.min(...outputs)) {
  console.error('run-tests: dist/ is older than its sources; building first');
  const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

// No --test-force-exit: with it, a file whose tests are registered after a top-level await lost
// some of them, silently and at random (173, 156 or 134 of test/agent/policy/command-analysis.test.ts's
// 173 passed). A test that starts a child kills it at its end instead (t.after).
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=120000', ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
