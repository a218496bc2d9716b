// Bundles app.tsx (React, the AI SDK and agentd/client/ai-sdk) into app.js beside index.html:
// `node examples/ai-sdk-chat/build.mjs [outdir]` after `npm run build` (the transport is dist/'s).
import { build } from 'esbuild';

const here = new URL('./', import.meta.url);
const outdir = process.argv[2] ?? here.pathname;
await build({
  entryPoints: [new URL('app.tsx', here).pathname],
  outdir,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  jsx: 'automatic',
  minify: true,
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});
