import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { globSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { IDLE_COLLECTION, shouldCollect, shouldShrinkYoung } from '../../src/cli/idle-collection.ts';

const BIN = new URL('../../bin/agentd.js', import.meta.url).pathname;
const HEAP_TUNING = new URL('../../src/cli/heap-tuning.ts', import.meta.url).href;
const IDLE_COLLECTION_MODULE = new URL('../../src/cli/idle-collection.ts', import.meta.url).href;

/** Starts `agentd serve` (dist/) on a fresh state dir and HOME; resolves with its stdout so far once it listens. */
async function serve(nodeArgs: string[], args: string[], until: RegExp = /agentd listening on/): Promise<{ output: string; home: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'agentd-serve-memory-'));
  const child = spawn(process.execPath, [...nodeArgs, BIN, 'serve', '--port', '0', '--state-dir', join(dir, 'state'), '--workspace-root', dir, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: dir },
  });
  let output = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  const seen = new Promise<void>((resolve, reject) => {
    const onData = (chunk: string) => {
      output += chunk;
      if (until.test(output)) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', () => reject(new Error(`agentd exited:\n${output}`)));
  });
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await seen;
  } catch (error) {
    await stop();
    throw error;
  }
  return { output, home: dir, stop };
}

const BUNDLE = new URL('../../dist/bundle/', import.meta.url);

/**
 * What the loaded module URLs hold: a file of the bundle (dist/bundle/) stands for the sources
 * esbuild put in it (its metafile), named as the URLs of those sources would be.
 */
function loadedSources(urls: string[]): Set<string> {
  const meta = JSON.parse(readFileSync(new URL('meta.json', BUNDLE), 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> };
  const root = new URL('../../', import.meta.url).href;
  const sources = new Set<string>();
  for (const url of urls) {
    const output = url.startsWith(BUNDLE.href) ? meta.outputs[`dist/bundle/${url.slice(BUNDLE.href.length)}`] : undefined;
    if (output === undefined) sources.add(url);
    else for (const input of Object.keys(output.inputs)) sources.add(root + input);
  }
  return sources;
}

describe('agentd serve: start-up and memory', () => {
  it('loads none of what only a tenant registry, a sandbox runner, PostgreSQL, telemetry, MCP or a provider SDK needs', async () => {
    // Every module URL node loads through the ESM loader, appended to a file by a resolve hook.
    const dir = mkdtempSync(join(tmpdir(), 'agentd-imports-'));
    const loaded = join(dir, 'loaded.txt');
    writeFileSync(join(dir, 'hooks.mjs'), `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(${JSON.stringify(loaded)}, result.url + '\\n');
  return result;
}`);
    writeFileSync(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(new URL(`file://${join(dir, 'hooks.mjs')}`).href)});`);
    const server = await serve(['--import', join(dir, 'register.mjs')], []);
    await server.stop();
    const urls = loadedSources(readFileSync(loaded, 'utf8').split('\n'));
    assert.ok([...urls].some((url) => url.endsWith('/dist/server.js')), 'the trace sees the server load');
    assert.ok([...urls].some((url) => url.includes('/node_modules/kysely/')), 'the trace sees packages load');
    const unexpected = [...urls].filter((url) =>
      /\/node_modules\/(typebox|pg|openai|@anthropic-ai|@opentelemetry|@modelcontextprotocol|prom-client)\/|\/dist\/(tenancy\/registry|sandbox\/(protocol|runner-probe|client))\.js$/.test(url),
    );
    assert.deepEqual(unexpected, []);
  });

  it('takes node:http in src/ as CommonJS: an ES import builds its facade, whose WebSocket getter loads undici (60 ms of CPU, 14 MB)', () => {
    const src = new URL('../../src/', import.meta.url);
    const esImports = globSync('**/*.ts', { cwd: src }).filter((file) => /^import (?!type )[^;]*from 'node:http';/m.test(readFileSync(new URL(file, src), 'utf8')));
    assert.deepEqual(esImports, []);
  });

  it('does not load undici at start-up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentd-builtins-'));
    const loaded = join(dir, 'builtins.txt');
    const preload = join(dir, 'builtins.cjs');
    writeFileSync(preload, `process.once('exit', () => require('node:fs').writeFileSync(${JSON.stringify(loaded)}, process.moduleLoadList.join('\\n')));`);
    const server = await serve(['--require', preload], []);
    await server.stop();
    const builtins = readFileSync(loaded, 'utf8').split('\n');
    rmSync(dir, { recursive: true, force: true });
    assert.ok(builtins.includes('NativeModule http'), 'the list names the built-ins the server loaded');
    assert.deepEqual(builtins.filter((name) => name.includes('undici')), []);
  });

  it('keeps the compiled code of its start-up in the user\'s cache directory once it listens, not in a shared /tmp', async () => {
    const server = await serve([], []);
    try {
      const cacheEntries = () => {
        const output = spawnSync('find', [join(server.home, '.cache', 'agentd', 'compile-cache'), '-type', 'f'], { encoding: 'utf8' }).stdout;
        return output.split('\n').filter(Boolean);
      };
      // written right after "listening", while the server runs on (a killed server keeps it too)
      for (const deadline = Date.now() + 20_000; cacheEntries().length === 0 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(cacheEntries().length >= 10, `compile cache entries: ${cacheEntries().join(', ')}`);
    } finally {
      await server.stop();
    }
  });

  it('collects the start-up garbage once it is idle, and gives back the young generation start-up grew', async () => {
    const server = await serve([], ['--log-level', 'debug'], /collected garbage while idle/);
    await server.stop();
    const line = JSON.parse(server.output.split('\n').find((text) => text.includes('collected garbage while idle'))!) as { usedMbBefore: number; usedMbAfter: number; youngMbBefore: number; youngMbAfter: number };
    assert.ok(line.usedMbAfter < line.usedMbBefore, JSON.stringify(line));
    // start-up grows V8's young generation to 8–16 MB; a regular collection right after it keeps all of it
    assert.ok(line.youngMbBefore >= 4, `start-up grew the young generation to ${line.youngMbBefore} MB only: ${JSON.stringify(line)}`);
    assert.ok(line.youngMbAfter <= 2, `the young generation is ${line.youngMbAfter} MB after the start-up collection: ${JSON.stringify(line)}`);
  });

  it('lets the old generation grow to its live data × 1.3, where V8 would let it reach several times that', () => {
    // 30 MB stay live in a ring while ten times as much becomes garbage through it.
    const churn = (tuned: boolean) => `
      import v8 from 'node:v8';
      ${tuned ? `const { tuneHeapForServer } = await import(${JSON.stringify(HEAP_TUNING)}); tuneHeapForServer();` : ''}
      const ring = new Array(200000);
      let peak = 0;
      for (let round = 0; round < 100; round++) {
        for (let i = 0; i < 20000; i++) ring[(round * 20000 + i) % ring.length] = { round, text: 'event ' + round + ':' + i + ' '.repeat(100) };
        await new Promise((resolve) => setImmediate(resolve));
        peak = Math.max(peak, v8.getHeapSpaceStatistics().find((space) => space.space_name === 'old_space').space_size);
      }
      console.log(peak / 1048576);`;
    const peakMb = (tuned: boolean) => {
      const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', churn(tuned)], { encoding: 'utf8', cwd: new URL('../..', import.meta.url).pathname });
      assert.equal(result.status, 0, result.stderr);
      return Number(result.stdout.trim());
    };
    const untuned = peakMb(false);
    const tuned = peakMb(true);
    assert.ok(tuned < untuned * 0.75, `old space peaked at ${tuned.toFixed(1)} MB tuned against ${untuned.toFixed(1)} MB untuned`);
  });

  it('gives the young generation a load grew back once the process has been quiet for a while', () => {
    // start-up's collection first, then a burst of short-lived objects grows V8's young generation to its maximum; then nothing happens
    const script = `
      import v8 from 'node:v8';
      const { collectWhenIdle, IDLE_COLLECTION } = await import(${JSON.stringify(IDLE_COLLECTION_MODULE)});
      const young = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size / 1048576;
      const collections = [];
      let requests = 0;
      // the default waits 30 s; 6 s is past V8's 5 s look-back of the allocation rate
      const options = { ...IDLE_COLLECTION, youngQuietMs: 6000 };
      collectWhenIdle(() => ({ requests, activeTurns: 0 }), { debug: (details, message) => collections.push({ message, youngMbAfter: details.youngMbAfter }) }, options);
      const keepAlive = setInterval(() => {}, 1000);
      const until = async (count) => {
        // generous: on a busy machine the burst alone takes seconds
        const deadline = Date.now() + 60000;
        while (collections.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
      };
      await until(1);
      let ring = [];
      for (let i = 0; i < 3e6; i++) { ring.push({ i, text: 'x' + i }); if (ring.length > 2e5) ring = []; }
      ring = null;
      requests++;
      const grown = young();
      await until(3);
      clearInterval(keepAlive);
      console.log(JSON.stringify({ grown, collections }));`;
    const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', cwd: new URL('../..', import.meta.url).pathname, timeout: 150_000 });
    assert.equal(result.status, 0, result.stderr);
    const { grown, collections } = JSON.parse(result.stdout.trim()) as { grown: number; collections: { message: string; youngMbAfter: number }[] };
    assert.ok(grown >= 16, `the burst grew the young generation to ${grown} MB`);
    assert.deepEqual(collections.slice(0, 2).map((collection) => collection.message), ['collected garbage while idle', 'collected garbage while idle']);
    // V8 itself shrinks the young generation at a regular collection when it measured low allocation
    // over its last 5 s, which a busy machine's slow burst can look like; otherwise the regular
    // collection keeps it and the one after the long quiet gives it back
    if (collections[1].youngMbAfter > 4) {
      assert.deepEqual(collections.map((collection) => collection.message), ['collected garbage while idle', 'collected garbage while idle', 'gave the young generation back while idle']);
      assert.ok(collections[2].youngMbAfter <= 4, `the young generation is ${collections[2].youngMbAfter} MB after the long quiet (was ${grown} MB)`);
    }
  });
});

describe('idle collection', () => {
  const options = IDLE_COLLECTION;
  const busyAt = 1_000_000;
  const grown = options.growthBytes;

  it('waits until nothing has happened for the quiet period', () => {
    assert.equal(shouldCollect({ busyAt, heapAfterCollection: 0, youngCollectedFor: -1 }, busyAt + options.quietMs - 1, grown, options), false);
    assert.equal(shouldCollect({ busyAt, heapAfterCollection: 0, youngCollectedFor: -1 }, busyAt + options.quietMs, grown, options), true);
  });

  it('gives the young generation back once per idle period, after V8\'s look-back of quiet, when it has grown', () => {
    const idle = { busyAt, heapAfterCollection: 0, youngCollectedFor: -1 };
    const young = options.youngBytes;
    assert.equal(shouldShrinkYoung(idle, busyAt + options.youngQuietMs - 1, young, options), false);
    assert.equal(shouldShrinkYoung(idle, busyAt + options.youngQuietMs, young, options), true);
    assert.equal(shouldShrinkYoung(idle, busyAt + options.youngQuietMs, young - 1, options), false);
    assert.equal(shouldShrinkYoung({ ...idle, youngCollectedFor: busyAt }, busyAt + options.youngQuietMs, young, options), false);
  });

  it('collects again only after the heap grew since the last collection', () => {
    const after = 40 * 1024 * 1024;
    const quiet = busyAt + options.quietMs;
    assert.equal(shouldCollect({ busyAt, heapAfterCollection: after, youngCollectedFor: -1 }, quiet, after + grown - 1, options), false);
    assert.equal(shouldCollect({ busyAt, heapAfterCollection: after, youngCollectedFor: -1 }, quiet, after + grown, options), true);
  });
});
