#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader: no build step between a clone and a server.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv.slice(2));
