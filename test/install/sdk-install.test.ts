/**
 * The SDK installs into another project as the README says, from the `npm pack` tarball:
 * - from the cache `npm ci` filled (`--prefer-offline`): agentd and the runtime packages it
 *   declares (those its bundles carry, issue 44), none of its devDependencies;
 * - with its types: tsc (strict) accepts the README's example and refuses a misuse;
 * - and it works: the README's example, run by Node from that project, streams a turn of a real
 *   agentd started from the same tarball installed with its optional drivers (so the packed server
 *   runs without any of the checkout's devDependencies too).
 *
 * - and `agentd chat` from the installed package renders in a terminal (tmux) with the libraries
 *   the build bundled (Markdown, code colours, widths), their installed copies removed.
 *
 * `npm pack --ignore-scripts`: the package's `prepare` would rebuild dist/ under the feet of the
 * tests running beside this one; `npm test` has just built it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readMarkdown } from '../docs/markdown.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels } from '../support/server.ts';
import { startAgentd, type AgentdProcess } from '../readme/agentd-process.ts';
import { tmuxChat } from '../cli/tmux-chat.ts';

const REPOSITORY = new URL('../..', import.meta.url).pathname;
const README_ADDRESS = 'http://127.0.0.1:4096';
const TSC = join(REPOSITORY, 'node_modules', '.bin', 'tsc');
const version: string = JSON.parse(readFileSync(join(REPOSITORY, 'package.json'), 'utf8')).version;
const tarballName = `agentd-${version}.tgz`;
const scratch = mkdtempSync(join(tmpdir(), 'agentd-sdk-install-'));

/**
 * What npm needs of the machine to reach its registry and build an addon (the CA bundle a proxy is
 * trusted through, npm's own settings, node-gyp's headers), and nothing of agentd's.
 */
function npmEnvironment(): Record<string, string> {
  // not every npm_config_*: `npm test` sets its own (the prefix of this repository among them)
  const names = ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'npm_config_registry', 'npm_config_cafile', 'npm_config_nodedir'];
  const kept = Object.entries(process.env).filter(([name]) => names.includes(name));
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...Object.fromEntries(kept.filter((entry): entry is [string, string] => entry[1] !== undefined)) };
}

/**
 * A registry request that hangs waits out npm's own fetch timeout (five minutes) before its retry,
 * past this test's 180 s: two CI-like runs stalled so. A short timeout with retries recovers.
 */
const NPM_INSTALL = ['install', '--prefer-offline', '--fetch-timeout=20000', '--fetch-retries=5', '--no-audit', '--no-fund'];

function run(command: string, args: string[], cwd: string) {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', env: npmEnvironment(), timeout: 180_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

function readme(): string {
  return readFileSync(join(REPOSITORY, 'README.md'), 'utf8');
}

/** The README's SDK example: the ```ts fence that imports agentd/client. */
function readmeExample(): string {
  const block = readMarkdown(join(REPOSITORY, 'README.md')).fences.find((fence) => fence.info === 'ts' && fence.content.includes("from 'agentd/client'"));
  assert.ok(block, 'README.md shows the SDK in a ts block');
  return block.content;
}

/** A new ES-module project in the scratch directory. */
function project(name: string): string {
  const directory = join(scratch, name);
  mkdirSync(directory);
  writeFileSync(join(directory, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, type: 'module' }));
  return directory;
}

describe('agentd/client installed into another project from the npm pack tarball', () => {
  let tarball = '';
  let client = '';
  let fake: FakeProvider;
  let agentd: AgentdProcess;

  before(async () => {
    const packed = run('npm', ['pack', '--ignore-scripts', '--pack-destination', scratch], REPOSITORY);
    assert.equal(packed.status, 0, packed.output);
    tarball = join(scratch, tarballName);
    assert.ok(existsSync(tarball), `npm pack wrote ${tarballName}: ${packed.output}`);
    client = project('client-only');
  });
  after(async () => {
    await agentd?.stop();
    await fake?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('is the tarball the README names', () => {
    assert.ok(readme().includes(`npm install /path/to/agentd/${tarballName}`), `README installs ${tarballName}`);
  });

  it('installs agentd and its declared runtime packages, none of its devDependencies', () => {
    const installed = run('npm', [...NPM_INSTALL, tarball], client);
    assert.equal(installed.status, 0, installed.output);
    const manifest = JSON.parse(readFileSync(join(REPOSITORY, 'package.json'), 'utf8'));
    for (const name of Object.keys(manifest.dependencies)) assert.ok(existsSync(join(client, 'node_modules', name)), `the declared ${name} is installed`);
    // a devDependency that a runtime package needs in another version (eventsource) is installed as the latter's
    const lock: { packages: Record<string, { dev?: boolean }> } = JSON.parse(readFileSync(join(REPOSITORY, 'package-lock.json'), 'utf8'));
    const neededAtRunTime = new Set(Object.entries(lock.packages).filter(([, entry]) => !entry.dev).map(([path]) => path.replace(/^.*node_modules\//, '')));
    const devOnly = Object.keys(manifest.devDependencies).filter((name) => !neededAtRunTime.has(name));
    assert.ok(devOnly.includes('typescript') && devOnly.includes('esbuild'));
    for (const name of devOnly) assert.ok(!existsSync(join(client, 'node_modules', name)), `the devDependency ${name} is not`);
  });

  it("type-checks the README's example with its types, and refuses a misuse", () => {
    writeFileSync(join(client, 'example.ts'), readmeExample());
    writeFileSync(join(client, 'misuse.ts'), "import { createClient } from 'agentd/client';\nawait createClient({ baseUrl: 'http://x' }).createSession({ body: { title: 42 } });\n");
    const compilerOptions = { module: 'nodenext', target: 'es2022', strict: true, noEmit: true, typeRoots: [join(REPOSITORY, 'node_modules', '@types')], types: ['node'] };
    writeFileSync(join(client, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['example.ts'] }));
    writeFileSync(join(client, 'tsconfig.misuse.json'), JSON.stringify({ compilerOptions, files: ['misuse.ts'] }));
    const checked = run(TSC, ['-p', 'tsconfig.json'], client);
    assert.equal(checked.status, 0, checked.output);
    const misuse = run(TSC, ['-p', 'tsconfig.misuse.json'], client);
    assert.notEqual(misuse.status, 0);
    assert.match(misuse.output, /misuse\.ts.*'number' is not assignable to type 'string'/s);
  });

  it("runs the README's example from that project against a server installed from the same tarball", async () => {
    const server = project('server');
    // from the cache `npm ci` filled where it can: a registry request that stalled once held this
    // install past its 180 s in a CI-like run. The registry is still asked what the cache lacks:
    // the metadata of the provider SDKs' optional peers (json-schema-to-ts), never installed.
    const installed = run('npm', [...NPM_INSTALL, tarball], server);
    assert.equal(installed.status, 0, installed.output);
    assert.ok(existsSync(join(server, 'node_modules', 'better-sqlite3')), 'with a cache the optional driver is installed');
    assert.ok(!existsSync(join(server, 'node_modules', 'typescript')) && !existsSync(join(server, 'node_modules', 'esbuild')), 'the server is bundled: no devDependency is installed');

    fake = await startFakeProvider();
    fake.enqueue({ kind: 'reply', text: 'Hello from the packed server.', chunkDelayMs: 2 });
    const modelsFile = join(server, 'models.json');
    writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
    mkdirSync(join(server, 'workspace'));
    agentd = await startAgentd(['--port', '0', '--state-dir', join(server, 'state'), '--models-file', modelsFile, '--workspace-root', join(server, 'workspace')], {}, server, join(server, 'node_modules', '.bin', 'agentd'));

    writeFileSync(join(client, 'main.ts'), readmeExample().replaceAll(README_ADDRESS, agentd.url));
    // Node 24 runs TypeScript as it is (type stripping): what the project wrote, nothing compiled
    const child = spawn(process.execPath, ['main.ts'], { cwd: client, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const exitCode = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearTimeout(timer);
    assert.equal(exitCode, 0, stderr);
    assert.equal(stdout, 'Hello from the packed server.Hello from the packed server.\n', 'the streamed deltas, then the result');
    assert.equal(fake.requests.length, 1, 'the turn reached the model through the packed server');
  });

  it('runs the installed agentd chat in a terminal, rendering with the libraries bundled into it', async () => {
    const server = join(scratch, 'server');
    // declared and installed, but the bundle carries its own copies: without the installed ones it renders the same
    for (const name of ['marked', 'emphasize', 'lowlight', 'highlight.js', 'string-width']) rmSync(join(server, 'node_modules', name), { recursive: true, force: true });
    const chat = tmuxChat(`agentd-installed-chat-${process.pid}`, { program: [join(server, 'node_modules', '.bin', 'agentd'), 'chat'] });
    try {
      await chat.start(agentd.url, join(server, 'workspace'));
      fake.enqueue({ kind: 'reply', text: '## Packed\n\n```js\nconst packed = true;\n```\n' });
      chat.send('render something', 'Enter');
      await chat.waitForScreen(/^Packed\n\n╭─ js\n│ const packed = true;\n╰─\n/m);
      assert.match(chat.screen({ escapes: true }), /\u001b\[[0-9;]*m\u001b?\[?[0-9;]*m?const\u001b/, 'the code is coloured');
    } finally {
      chat.kill();
    }
  });
});
