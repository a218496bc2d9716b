import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { INSPECTION_TIME_MS, inspectLocalRepository, LocalRepositoryRefused } from '../../src/workspace/local-repository.ts';
import { makeRepository } from '../support/git.ts';

test('inspecting a repository of 30,000 symlinks gives the event loop back all along, and ends within its bound', async (t) => {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-inspection-')));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const repository = path.join(root, 'links');
  makeRepository(repository, { 'README.md': 'links\n' });
  const many = path.join(repository, '.git', 'many');
  mkdirSync(many);
  for (let index = 0; index < 30_000; index++) symlinkSync('../HEAD', path.join(many, `link-${index}`));

  let last = performance.now();
  let worstGap = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    worstGap = Math.max(worstGap, now - last);
    last = now;
  }, 5);
  const started = performance.now();
  const inspected = await inspectLocalRepository(repository, [root]).catch((error: Error) => error);
  const tookMs = performance.now() - started;
  clearInterval(ticker);
  if (inspected instanceof Error) {
    // A machine too loaded to finish in time must meet the bound instead.
    assert.ok(inspected instanceof LocalRepositoryRefused && /took too long/.test(inspected.message), inspected.message);
    assert.ok(tookMs < INSPECTION_TIME_MS + 1000, `the refusal came after ${Math.round(tookMs)} ms`);
  } else {
    assert.equal(inspected.path, repository);
    assert.ok(inspected.gitDirectories.has(path.join(repository, '.git')));
  }
  // The synchronous walk this replaced held the loop for the whole inspection (seconds here);
  // now it gives the loop back every 10 ms of work.
  assert.ok(worstGap < 250, `the event loop waited up to ${Math.round(worstGap)} ms during a ${Math.round(tookMs)} ms inspection`);
});
