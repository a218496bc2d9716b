import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compileGlob } from '../../../src/exec/search/glob.ts';
import { findOnPath } from '../../../src/exec/search/ripgrep-search.ts';
import { chooseSearchBackend, createSearchTool, MAX_SEARCH_RESULTS } from '../../../src/agent/tools/search/search-tool.ts';
import { ToolError } from '../../../src/agent/tools/types.ts';
import { makeContext, makeWorkspace, type Workspace } from './context.ts';
import { race, startSwapper } from './symlink-swapper.ts';

const fallback = createSearchTool({ ripgrepPath: null });
const search = (tool: typeof fallback, input: object, ws: Workspace) => tool.run(tool.parse(JSON.stringify(input)), makeContext(ws));

function populate(ws: Workspace) {
  mkdirSync(path.join(ws.cwd, 'src', 'nested'), { recursive: true });
  mkdirSync(path.join(ws.cwd, 'node_modules', 'dep'), { recursive: true });
  mkdirSync(path.join(ws.cwd, '.git'), { recursive: true });
  writeFileSync(path.join(ws.cwd, 'src', 'a.ts'), 'const needle = 1;\nconst other = 2;\n');
  writeFileSync(path.join(ws.cwd, 'src', 'nested', 'b.md'), 'a NEEDLE in docs\n');
  writeFileSync(path.join(ws.cwd, 'node_modules', 'dep', 'index.js'), 'needle in a dependency\n');
  writeFileSync(path.join(ws.cwd, '.git', 'config'), 'needle in git\n');
  writeFileSync(path.join(ws.cwd, 'blob.bin'), Buffer.from('needle\0binary'));
}

test('the fallback finds matches as path:line:text, skipping .git, node_modules and binaries', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  populate(ws);
  const outcome = await search(fallback, { pattern: 'needle' }, ws);
  assert.equal(outcome.output, 'src/a.ts:1:const needle = 1;');
  const insensitive = await search(fallback, { pattern: '(?i)needle' }, ws);
  assert.equal(insensitive.output, 'src/a.ts:1:const needle = 1;\nsrc/nested/b.md:1:a NEEDLE in docs');
});

test('the fallback honours path and glob, including exclusions and ** patterns', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  populate(ws);
  assert.equal((await search(fallback, { pattern: '(?i)needle', glob: '*.md' }, ws)).output, 'src/nested/b.md:1:a NEEDLE in docs');
  assert.equal((await search(fallback, { pattern: '(?i)needle', glob: '!*.md' }, ws)).output, 'src/a.ts:1:const needle = 1;');
  assert.equal((await search(fallback, { pattern: 'const', path: 'src/a.ts' }, ws)).output, 'src/a.ts:1:const needle = 1;\nsrc/a.ts:2:const other = 2;');
  assert.equal((await search(fallback, { pattern: '(?i)needle', path: 'src', glob: 'nested/**' }, ws)).output, 'src/nested/b.md:1:a NEEDLE in docs');
  assert.equal((await search(fallback, { pattern: 'absent' }, ws)).output, 'No matches.');
});

test('the fallback does not follow symlinks out of the workspace', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  symlinkSync('/etc', path.join(ws.cwd, 'etc'));
  assert.equal((await search(fallback, { pattern: 'root' }, ws)).output, 'No matches.');
  await assert.rejects(search(fallback, { pattern: 'root', path: 'etc' }, ws), /outside every allowed workspace root/);
});

test('results are bounded', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'many.txt'), 'hit\n'.repeat(MAX_SEARCH_RESULTS + 50));
  const outcome = await search(fallback, { pattern: 'hit' }, ws);
  assert.equal(outcome.truncated, true);
  assert.equal(outcome.output.split('\n').filter((line) => line.startsWith('many.txt:')).length, MAX_SEARCH_RESULTS);
  assert.match(outcome.output, /stopped after 200 matches/);
});

test('bad patterns and missing paths are reported to the model', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  writeFileSync(path.join(ws.cwd, 'x.txt'), 'a-b\n');
  await assert.rejects(search(fallback, { pattern: '(unclosed' }, ws), /invalid regular expression/);
  await assert.rejects(search(fallback, { pattern: 'x', path: 'missing' }, ws), /does not exist/);
  assert.equal((await search(fallback, { pattern: 'a\\-b' }, ws)).output, 'x.txt:1:a-b');
  assert.throws(() => fallback.parse('{"path":"x"}'), ToolError);
});

test('the backend choice: null forces the fallback, a ripgrep path selects ripgrep, PATH lookup finds executables only', (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  assert.equal(chooseSearchBackend({ ripgrepPath: null }).name, 'javascript');
  assert.equal(chooseSearchBackend({ ripgrepPath: '/usr/bin/rg' }).name, 'ripgrep');
  const bin = path.join(ws.root, 'bin');
  mkdirSync(bin);
  writeFileSync(path.join(bin, 'rg'), '#!/bin/sh\n');
  assert.equal(findOnPath('rg', `/nonexistent${path.delimiter}${bin}`), null, 'not executable yet');
  chmodSync(path.join(bin, 'rg'), 0o755);
  assert.equal(findOnPath('rg', `/nonexistent${path.delimiter}${bin}`), path.join(bin, 'rg'));
  assert.equal(findOnPath('rg', ''), null);
});

test('the ripgrep backend passes safe arguments, parses --null output and shows only lines confirmed in the files (stand-in rg)', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const script = path.join(ws.root, 'rg');
  const argsFile = path.join(ws.root, 'args.txt');
  mkdirSync(path.join(ws.cwd, 'src'));
  writeFileSync(path.join(ws.cwd, 'src', 'a.ts'), `${'filler\n'.repeat(6)}found: it -dash\n`);
  writeFileSync(path.join(ws.cwd, 'weird:name.ts'), `${'filler\n'.repeat(11)}x -dash\n`);
  // Prints matches the way ripgrep does with --null (path NUL line:text); the text it prints is not
  // what is shown, and a line without the pattern (as if read elsewhere) is dropped.
  writeFileSync(
    script,
    `#!/bin/bash\nprintf '%s\\n' "$@" > ${argsFile}\nfor t; do :; done\n` +
      `printf '%s\\0%s\\n' "$t/src/a.ts" "7:stale" "$t/weird:name.ts" "12:x" "$t/src/a.ts" "1:OUTSIDE -dash"\n`,
  );
  chmodSync(script, 0o755);
  const tool = createSearchTool({ ripgrepPath: script });
  const outcome = await search(tool, { pattern: '-dash', glob: '*.ts' }, ws);
  assert.equal(outcome.output, 'src/a.ts:7:found: it -dash\nweird:name.ts:12:x -dash');
  const args = readFileSync(argsFile, 'utf8').split('\n');
  assert.equal(args[0], '--no-config');
  assert.ok(args.includes('--null'));
  assert.deepEqual(args.slice(args.indexOf('--glob'), args.indexOf('--glob') + 2), ['--glob', '*.ts']);
  assert.deepEqual(args.slice(-5, -1), ['-e', '-dash', '--', ws.cwd]);
});

test('ripgrep is killed when the search outlives its time limit', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  const script = path.join(ws.root, 'rg');
  const pidFile = path.join(ws.root, 'rg.pid');
  writeFileSync(script, `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 60\n`);
  chmodSync(script, 0o755);
  const tool = createSearchTool({ ripgrepPath: script, timeoutMs: 300 });
  const started = Date.now();
  await assert.rejects(search(tool, { pattern: 'x' }, ws), /did not finish within/);
  assert.ok(Date.now() - started < 10_000, 'the search returned at its deadline, not when the child chose to exit');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  // SIGKILL is immediate; the wait is only for the child to be reaped.
  for (let waited = 0; alive() && waited < 5000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(alive(), false, 'the ripgrep process is gone');
});

test('a catastrophic pattern cannot stall the fallback: linear-time matching, the event loop keeps turning', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  for (let index = 0; index < 20; index++) writeFileSync(path.join(ws.cwd, `f${index}.txt`), `${'a'.repeat(29)}!\n`.repeat(2000));
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 1);
  const outcome = await search(fallback, { pattern: '(\\w+)+#$' }, ws).finally(() => clearInterval(ticker));
  assert.equal(outcome.output, 'No matches.');
  assert.ok(ticks > 0, 'timers ran while the search did');
  await assert.rejects(search(fallback, { pattern: '(a)\\1' }, ws), /invalid regular expression.*no lookaround or backreferences/);
});

test('the fallback gives up at its time limit', async (t) => {
  const ws = makeWorkspace();
  t.after(ws.cleanup);
  for (let index = 0; index < 200; index++) writeFileSync(path.join(ws.cwd, `f${index}.txt`), 'text\n'.repeat(5000));
  const slow = createSearchTool({ ripgrepPath: null, timeoutMs: 1 });
  await assert.rejects(search(slow, { pattern: 'no(thing)+here' }, ws), /did not finish within/);
});

for (const backend of ['javascript', 'ripgrep'] as const) {
  test(`a directory swapped for a symlink out of the root is never searched (${backend}, race)`, async (t) => {
    const ripgrep = findOnPath('rg', process.env.PATH);
    assert.ok(backend === 'javascript' || ripgrep !== null, 'ripgrep must be installed (.ci/run installs it)');
    const ws = makeWorkspace();
    t.after(ws.cleanup);
    const outside = path.join(path.dirname(ws.root), 'outside');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'secret.txt'), 'TOKEN OUTSIDE-SECRET\n');
    mkdirSync(path.join(ws.cwd, 'dir.real'));
    writeFileSync(path.join(ws.cwd, 'dir.real', 'secret.txt'), 'TOKEN inside\n');
    const tool = createSearchTool({ ripgrepPath: backend === 'ripgrep' ? ripgrep : null });
    const swapper = await startSwapper('directory', path.join(ws.cwd, 'dir'), outside);
    let insideHits = 0;
    try {
      insideHits = await race(backend === 'ripgrep' ? 150 : 400, async () => {
        const outcome = await search(tool, { pattern: 'TOKEN', path: 'dir' }, ws).catch((error: Error) => ({ output: error.message }));
        assert.doesNotMatch(outcome.output, /OUTSIDE-SECRET/);
        return outcome.output.includes('TOKEN inside');
      });
    } finally {
      await swapper.stop();
    }
    assert.ok(insideHits > 0, 'the race never let a search through; the test proves nothing');
  });
}

test('globs translate like ripgrep globs', () => {
  assert.equal(compileGlob('*.ts').matches('src/deep/a.ts'), true);
  assert.equal(compileGlob('*.ts').matches('src/a.tsx'), false);
  assert.equal(compileGlob('src/*.ts').matches('src/deep/a.ts'), false);
  assert.equal(compileGlob('src/**/*.ts').matches('src/deep/a.ts'), true);
  assert.equal(compileGlob('src/**/*.ts').matches('src/a.ts'), true);
  assert.equal(compileGlob('*.{ts,md}').matches('x.md'), true);
  assert.equal(compileGlob('file[0-9].txt').matches('file7.txt'), true);
  assert.equal(compileGlob('!*.min.js').matches('app.min.js'), false);
  assert.equal(compileGlob('a.b').matches('axb'), false);
});
