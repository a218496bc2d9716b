/**
 * The peers are installed on demand into a cache outside the repository, at pinned versions, so
 * neither `npm install` of agentd nor CI ever fetches them. A stamp file records what was
 * installed; a changed pin reinstalls.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Pinned together: langgraph-api 2.0.0 wants @langchain/langgraph-checkpoint ~1.0, which the
 * langgraph 1.3 line still uses; @langchain/openai 1.5.8 is the newest that runs on Node 20.
 */
export const PEER_PACKAGES: Readonly<Record<string, string>> = {
  'opencode-ai': '1.18.33',
  '@langchain/langgraph-cli': '2.0.0',
  '@langchain/langgraph': '1.3.6',
  '@langchain/langgraph-checkpoint': '1.0.4',
  '@langchain/core': '1.4.0',
  '@langchain/openai': '1.5.8',
};

/** opencode-ai links its platform binary in postinstall; esbuild (under tsx) checks its own. */
const ALLOWED_INSTALL_SCRIPTS = { 'opencode-ai': true, esbuild: true };
const STAMP = '.agentd-bench-pins.json';

export function peersDirectory(): string {
  return process.env.BENCH_PEERS_DIR ?? join(homedir(), '.cache', 'agentd-bench-peers');
}

/** Installs the pinned peers unless the cache already holds exactly them; returns the cache directory. */
export function ensurePeersInstalled(): string {
  if (process.env.CI) throw new Error('bench/peers.ts installs third-party servers and never runs in CI');
  const directory = peersDirectory();
  const wanted = JSON.stringify(PEER_PACKAGES);
  const stamp = join(directory, 'node_modules', STAMP);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) return directory;

  mkdirSync(directory, { recursive: true });
  const manifest = { name: 'agentd-bench-peers', private: true, type: 'module', dependencies: PEER_PACKAGES, allowScripts: ALLOWED_INSTALL_SCRIPTS };
  writeFileSync(join(directory, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`# installing the peers into ${directory} (${Object.entries(PEER_PACKAGES).map(([name, version]) => `${name}@${version}`).join(', ')})`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save'], { cwd: directory, stdio: ['ignore', 'inherit', 'inherit'] });
  writeFileSync(stamp, wanted);
  return directory;
}

export function peerBinary(name: string): string {
  return join(peersDirectory(), 'node_modules', '.bin', name);
}
