#!/usr/bin/env node
// The shipped server is the compiled JavaScript in dist/ (`npm run build`, run by `npm ci`):
// loading TypeScript through a transpiler at every start would cost seconds.
let main;
try {
  ({ main } = await import('../dist/cli/main.js'));
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist/cli/main.js')) throw error;
  console.error('agentd: dist/ is missing; run `npm run build` (npm ci does it for you)');
  process.exit(1);
}
await main(process.argv.slice(2));
