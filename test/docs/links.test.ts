/**
 * The documentation stands on its own: README.md and docs/*.md cite only what a clone holds.
 *
 * - Every relative link resolves to a file or folder of the repository, and a `#fragment` names a
 *   heading of the target markdown file.
 * - A markdown file is cited as a link, never as a bare name: "see SPEC.md" leaves a reader of a
 *   clone hunting for a file that may not be there.
 * - A repository path named in the prose (`src/…`, `test/…`, `docs/…`, …) exists. `dist/` is left
 *   out: it is what `npm run build` writes.
 *
 * The copies in docs/reference/ are kept as they were written and are not checked here.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readMarkdown } from './markdown.ts';

const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const documents = ['README.md', ...readdirSync(join(repositoryRoot, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;
const MARKDOWN_FILE_NAME = /(?:^|[\s(`"'])((?:[\w.-]+\/)*[\w.-]+\.md)\b/g;
/** Files of the user's project that agentd reads (CONTRACT.md §19), not documents of this repository. */
const PROJECT_FILE_NAMES = new Set(['AGENTS.md']);
const REPOSITORY_PATH = /(?:^|[\s(`"'])((?:bench|bin|docs|examples|scripts|src|test)\/[\w./-]*[\w/])/g;

function deadLinks(document: string): string[] {
  const path = join(repositoryRoot, document);
  const markdown = readMarkdown(path);
  const problems: string[] = [];
  for (const link of markdown.links) {
    if (EXTERNAL.test(link.href)) continue;
    const [target, fragment] = link.href.split('#', 2);
    const targetPath = target === '' ? path : resolve(dirname(path), decodeURIComponent(target));
    if (!existsSync(targetPath)) {
      problems.push(`${document}:${link.line}: link to ${link.href}: ${relative(repositoryRoot, targetPath)} does not exist`);
      continue;
    }
    if (fragment && targetPath.endsWith('.md') && !readMarkdown(targetPath).anchors.has(fragment)) {
      problems.push(`${document}:${link.line}: link to ${link.href}: no heading #${fragment} in ${relative(repositoryRoot, targetPath)}`);
    }
  }
  return problems;
}

function unlinkedOrMissingCitations(document: string): string[] {
  const problems: string[] = [];
  for (const mention of readMarkdown(join(repositoryRoot, document)).mentions) {
    for (const [, name] of mention.text.matchAll(MARKDOWN_FILE_NAME)) {
      if (PROJECT_FILE_NAMES.has(name)) continue;
      problems.push(`${document}:${mention.line}: ${name} is named but not linked`);
    }
    for (const [, path] of mention.text.matchAll(REPOSITORY_PATH)) {
      if (!existsSync(join(repositoryRoot, path))) problems.push(`${document}:${mention.line}: ${path} does not exist`);
    }
  }
  return problems;
}

describe('documentation links', () => {
  it('finds the documents it checks', () => {
    assert.ok(documents.includes('README.md') && documents.includes('docs/API.md'), documents.join(', '));
  });

  for (const document of documents) {
    it(`${document}: every relative link resolves`, () => {
      assert.deepEqual(deadLinks(document), []);
    });

    it(`${document}: every cited file is in the repository, and markdown files are cited as links`, () => {
      assert.deepEqual(unlinkedOrMissingCitations(document), []);
    });
  }

  it('the specification the docs cite is in the repository', () => {
    for (const name of ['SPEC.md', 'CONTRACT.md', 'PERFORMANCE.md']) assert.ok(existsSync(join(repositoryRoot, 'docs', 'reference', name)), name);
  });
});
