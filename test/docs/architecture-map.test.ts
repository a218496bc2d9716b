/**
 * docs/ARCHITECTURE.md is a map, and a map is only useful while it is true of the code:
 *
 * - every file or folder it names in a code span exists (`runtime/turn/turns.ts` is read under
 *   src/, `test/…`, `docs/…`, `scripts/…` under the repository; `<dialect>` stands for any name);
 * - every name it puts next to files (`TurnService.submit`, `SERVE_FLAGS`) is written in one of the
 *   files named in the same step of the walk of a turn, or the same row of the table, each part of
 *   a dotted name included;
 * - the "Where do I change X" table has a row for each thing a newcomer comes to change.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, globSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const architecture = readFileSync(join(repositoryRoot, 'docs/ARCHITECTURE.md'), 'utf8');

/** What the table must say where to change, each matched against the table's first column. */
const REQUIRED_ROWS = ['endpoint', 'event', 'tool', 'dialect', 'flag', 'projection rule', 'tenant limit', 'sandbox operation'];

const REPOSITORY_FOLDERS = /^(?:bench|bin|docs|examples|scripts|test)\//;
const PATH = /^[\w.<>/-]+(?:\.(?:ts|mjs|md|json)|\/)$/;
const NAME = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?$/;

function codeSpans(text: string): string[] {
  return [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]);
}

/** The repository files a path of the map names: one, or every match of its `<placeholder>`s. */
function filesOf(path: string): string[] {
  const fromRoot = REPOSITORY_FOLDERS.test(path) ? path : join('src', path.replace(/^src\//, ''));
  const pattern = fromRoot.replace(/<[^>]+>/g, '*').replace(/\/$/, '');
  return pattern.includes('*') ? globSync(pattern, { cwd: repositoryRoot }) : existsSync(join(repositoryRoot, pattern)) ? [pattern] : [];
}

function missingPaths(text: string): string[] {
  return codeSpans(text).filter((span) => PATH.test(span) && filesOf(span).length === 0);
}

/** The names of a passage that none of the files it names contains. */
function namesNotFound(passage: string): string[] {
  const spans = codeSpans(passage);
  const files = spans.filter((span) => PATH.test(span)).flatMap(filesOf).filter((file) => statSync(join(repositoryRoot, file)).isFile());
  const texts = files.map((file) => readFileSync(join(repositoryRoot, file), 'utf8'));
  return spans
    .filter((span) => !PATH.test(span) && NAME.test(span))
    .filter((name) => {
      const parts = name.replace(/\(\)$/, '').split('.');
      return !texts.some((text) => parts.every((part) => new RegExp(`(?<![\\w$])${part.replace(/\$/g, '\\$')}(?![\\w$])`).test(text)));
    });
}

function section(heading: string): string {
  const start = architecture.indexOf(`\n## ${heading}`);
  assert.ok(start >= 0, `docs/ARCHITECTURE.md has a "## ${heading}" section`);
  const end = architecture.indexOf('\n## ', start + 1);
  return architecture.slice(start, end === -1 ? undefined : end);
}

/** The numbered steps of the walk, each with its continuation lines. */
function walkSteps(): string[] {
  return section('The walk of one turn').split(/\n(?=\d+\. )/).filter((step) => /^\d+\. /.test(step));
}

/** The table's rows below its header, as [first cell, the whole row]. */
function tableRows(): [string, string][] {
  return section('Where do I change X')
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2)
    .map((line): [string, string] => [line.split('|')[1].trim(), line]);
}

describe('docs/ARCHITECTURE.md names what exists', () => {
  it('every file and folder it names exists', () => {
    assert.deepEqual(missingPaths(architecture), []);
  });

  it('walks a turn in steps, each naming only what its files contain', () => {
    const steps = walkSteps();
    assert.ok(steps.length >= 6, `${steps.length} steps`);
    assert.deepEqual(steps.flatMap((step) => namesNotFound(step).map((name) => `step ${step.slice(0, step.indexOf('.'))}: ${name}`)), []);
  });

  it('has a "Where do I change X" row for each thing a newcomer changes, every row naming files that hold what it names', () => {
    const rows = tableRows();
    assert.deepEqual(REQUIRED_ROWS.filter((subject) => !rows.some(([first]) => first.includes(subject))), [], 'rows missing');
    for (const [first, row] of rows) {
      assert.ok(codeSpans(row).some((span) => PATH.test(span)), `"${first}" names no file`);
      assert.deepEqual(namesNotFound(row), [], `"${first}"`);
    }
  });

  it('catches a renamed file and a renamed symbol', () => {
    assert.deepEqual(missingPaths('`runtime/turn/turn-runer.ts` and `agent/providers/<dialect>/adapter.ts`'), ['runtime/turn/turn-runer.ts']);
    assert.deepEqual(namesNotFound('`runtime/turn/turns.ts` `TurnService.submit` `TurnService.sumbit` `agent/providers/<dialect>/descriptor.ts` `DialectDescriptor`'), ['TurnService.sumbit']);
  });
});
