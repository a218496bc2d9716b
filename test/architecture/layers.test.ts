/**
 * The house's one direction (docs/ARCHITECTURE.md, "Layers"): every import of src/, type-only and
 * dynamic ones included, points down the layer order written there, and no import cycle exists.
 * The order is read from the document itself, so the picture and the code cannot drift apart.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { findCycles, readImportGraph } from '../support/import-graph.ts';

const graph = readImportGraph(fileURLToPath(new URL('../../src', import.meta.url)));
const architecture = readFileSync(new URL('../../docs/ARCHITECTURE.md', import.meta.url), 'utf8');

/** The rooms of the "Layers" block, top first; the names on one line share a rank. */
function readLayers(): string[][] {
  const section = /## Layers[^\n]*\n[\s\S]*?```text\n([\s\S]*?)```/.exec(architecture);
  assert.ok(section, 'docs/ARCHITECTURE.md has a "Layers" section with a ```text block');
  return section[1]
    .split('\n')
    .filter((line) => /^\S/.test(line))
    .map((line) => line.split(/\s{2,}/)[0].split(/\s+/));
}

function roomOf(file: string, rooms: string[]): string | undefined {
  return rooms.filter((room) => (room.endsWith('/') ? file.startsWith(room) : file === room)).sort((a, b) => b.length - a.length)[0];
}

const layers = readLayers();
const rankOf = new Map(layers.flatMap((names, rank) => names.map((name): [string, number] => [name, rank])));
const rooms = [...rankOf.keys()];

function upwardImports(of = graph): string[] {
  return [...of].flatMap(([file, targets]) =>
    targets
      .filter((target) => rankOf.get(roomOf(target, rooms)!)! < rankOf.get(roomOf(file, rooms)!)!)
      .map((target) => `${file} -> ${target}`),
  );
}

describe('layers of src/ (docs/ARCHITECTURE.md)', () => {
  it('reads a layer order that names every room of src/', () => {
    assert.ok(layers.length >= 10, layers.join(' | '));
    assert.deepEqual(rooms.filter((room) => !/^[a-z-]+(\/|\.ts)$/.test(room)), [], 'a room is a folder/ or a file.ts of src/');
    assert.deepEqual([...graph.keys()].filter((file) => roomOf(file, rooms) === undefined), [], 'files in no room of the Layers block');
  });

  it('has no import that points up the layer order', () => {
    assert.deepEqual(upwardImports(), []);
  });

  it('has no import cycle', () => {
    assert.deepEqual(findCycles(graph), []);
  });

  it('catches what it is meant to catch: an upward import and a cycle planted in a copy of the graph', () => {
    const planted = new Map(graph);
    planted.set('domain/ids.ts', [...(graph.get('domain/ids.ts') ?? []), 'runtime/turn/turn-runner.ts']);
    assert.deepEqual(upwardImports(planted), ['domain/ids.ts -> runtime/turn/turn-runner.ts']);
    assert.ok(findCycles(planted).some((cycle) => cycle.includes('domain/ids.ts')));
    // a type-only import inside one room counts: the port re-exporting the executor that implements it
    planted.set('exec/executor.ts', [...(graph.get('exec/executor.ts') ?? []), 'exec/host-executor.ts']);
    assert.ok(findCycles(planted).some((cycle) => cycle.includes('exec/executor.ts') && cycle.includes('exec/host-executor.ts')));
  });
});
