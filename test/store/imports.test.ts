import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { findCycles, readImportGraph } from '../support/import-graph.ts';

const graph = readImportGraph(fileURLToPath(new URL('../../src', import.meta.url)));

function importsOf(folder: string): [string, string][] {
  return [...graph].filter(([file]) => file.startsWith(`${folder}/`)).flatMap(([file, targets]) => targets.map((target): [string, string] => [file, target]));
}

describe('layering of the store and the shared words', () => {
  it('finds the files it checks', () => {
    assert.ok(graph.has('store/history.ts') && graph.has('domain/history-entry.ts'));
  });

  it('has no import cycle in the store', () => {
    const storeOnly = new Map([...graph].filter(([file]) => file.startsWith('store/')));
    assert.deepEqual(findCycles(storeOnly), []);
  });

  it('keeps store/, config/ and workspace/ away from the provider adapters', () => {
    const reaching = ['store', 'config', 'workspace'].flatMap(importsOf).filter(([, target]) => target.startsWith('agent/'));
    assert.deepEqual(reaching, []);
  });

  it('lets domain/ import nothing but domain/', () => {
    assert.deepEqual(importsOf('domain').filter(([, target]) => !target.startsWith('domain/')), []);
  });
});
