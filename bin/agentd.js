#!/usr/bin/env node
// The shipped server is the bundled JavaScript in dist/bundle/ (`npm run build`, run by `npm ci`):
// loading TypeScript through a transpiler at every start would cost seconds, and loading tsc's
// hundreds of modules one by one costs a third of a second and 13 MB (scripts/bundle.mjs).
import { enableCompileCache } from 'node:module';
import { compileCacheDirectory } from './compile-cache.js';

// V8's code for the bundle, kept from one start to the next (docs/BENCHMARKS.md, "Start-up on Node 24")
enableCompileCache(compileCacheDirectory());
let main;
try {
  ({ main } = await import('../dist/bundle/agentd.js'));
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist/bundle/agentd.js')) throw error;
  console.error('agentd: dist/ is missing; run `npm run build` (npm ci does it for you)');
  process.exit(1);
}
await main(process.argv.slice(2));
