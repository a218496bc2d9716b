// After tsc and emit-contract: bundle the server and the sandbox runner into dist/bundle/, which
// bin/agentd.js and bin/agentd-sandbox run, and the SDK into dist/client/agentd-client.js. Node loads a few dozen files instead of ~700 modules
// (Kysely alone is 262), which halves the time to ready and saves about 13 MB of resident memory
// (docs/BENCHMARKS.md, figures 8 and 9).
//
// - Code splitting keeps every dynamic import() a chunk of its own, loaded only when used: the
//   provider SDKs, PostgreSQL, telemetry, MCP, tenancy and the sandbox client stay off the
//   single-user start-up as they are in dist/.
// - Native and optional packages stay in node_modules (better-sqlite3 loads a .node file; pg's
//   native binding is optional).
// - Bundled CommonJS (Fastify, pino) calls require() for node's built-ins: each output file gets a
//   module-local require.
// - meta.json (esbuild's metafile) says which sources each output holds (test/cli/serve-memory).
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { build } from 'esbuild';

const root = new URL('../', import.meta.url);
const dist = new URL('dist/', root);
const outdir = new URL('bundle/', dist);

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: {
    agentd: new URL('cli/main.js', dist).pathname,
    'agentd-sandbox': new URL('sandbox/runner/main.js', dist).pathname,
    // the outputSchema worker thread (src/agent/schema-worker.ts), which structured-output.ts starts beside itself
    'schema-worker': new URL('agent/schema-worker.js', dist).pathname,
  },
  outdir: outdir.pathname,
  absWorkingDir: root.pathname,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['better-sqlite3', 'pg', 'pg-native'],
  banner: { js: "import { createRequire as createBundleRequire } from 'node:module'; const require = createBundleRequire(import.meta.url);" },
  metafile: true,
  // No comments or indentation: the loaded text is a third smaller, and without the comments'
  // non-Latin-1 characters (→, §, µ…) V8 keeps it one byte a character instead of two (4 MB less
  // RSS at start-up, docs/BENCHMARKS.md). Names stay, so stack traces still name every function.
  minifyWhitespace: true,
  logLevel: 'warning',
});
writeFileSync(new URL('meta.json', outdir), JSON.stringify(result.metafile));
// src/api/contract.ts reads the contract next to the module that holds it
copyFileSync(new URL('api/contract.json', dist), new URL('contract.json', outdir));
// src/agent/policy/bash-parser.ts loads the bash parser's WebAssembly from beside the module that holds it
const requireFromRoot = createRequire(new URL('package.json', root));
for (const [file, from] of [['web-tree-sitter.wasm', 'web-tree-sitter/web-tree-sitter.wasm'], ['tree-sitter-bash.wasm', 'tree-sitter-bash/tree-sitter-bash.wasm']]) {
  copyFileSync(requireFromRoot.resolve(from), new URL(file, outdir));
}

// The SDK (`agentd/client`) as one ES module with its one dependency (eventsource-parser) inside:
// a project that installs agentd for the client needs nothing else from the registry, and a
// browser bundler or a <script type="module"> loads it as is. Its types stay tsc's dist/client/*.d.ts.
const client = await build({
  entryPoints: [new URL('client/index.js', dist).pathname],
  outfile: new URL('client/agentd-client.js', dist).pathname,
  absWorkingDir: root.pathname,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  metafile: true,
  logLevel: 'warning',
});
// scripts/bill-of-materials.mjs declares what both bundles carry
writeFileSync(new URL('client/meta.json', dist), JSON.stringify(client.metafile));

// `agentd/client/ai-sdk`: the AI SDK transport, one ES module like the SDK. It imports only types
// of the `ai` package (the app's own, a peer dependency), so nothing of it is bundled; `ai` stays
// external all the same, should a value import ever be added.
await build({
  entryPoints: [new URL('client/ai-sdk.js', dist).pathname],
  outfile: new URL('client/agentd-ai-sdk.js', dist).pathname,
  absWorkingDir: root.pathname,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  external: ['ai'],
  logLevel: 'warning',
});
