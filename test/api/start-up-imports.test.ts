import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCE = fileURLToPath(new URL('../../src', import.meta.url));

/**
 * The modules a start-up loads: static imports that keep a value (an import of types only is
 * erased by the compiler), followed from a file. Dynamic imports run later, so they are not walked.
 */
function loadedAtStartUp(entry: string): Map<string, string[]> {
  const packagesByFile = new Map<string, string[]>();
  const pending = [resolve(SOURCE, entry)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (packagesByFile.has(file)) continue;
    const packages: string[] = [];
    packagesByFile.set(file, packages);
    for (const [, clause, target] of readFileSync(file, 'utf8').matchAll(/^import\s+([^'";]*?)\s*(?:from\s+)?'([^']+)';/gm)) {
      if (isTypeOnly(clause)) continue;
      if (target.startsWith('.')) pending.push(resolve(dirname(file), target));
      else packages.push(target);
    }
  }
  return packagesByFile;
}

function isTypeOnly(clause: string): boolean {
  if (clause.startsWith('type ')) return true;
  const named = /^\{([^}]*)\}$/.exec(clause);
  return named !== null && named[1].split(',').map((name) => name.trim()).filter(Boolean).every((name) => name.startsWith('type '));
}

describe('what start-up loads', () => {
  it('walks the server module and its imports', () => {
    const files = [...loadedAtStartUp('server.ts').keys()].map((file) => relative(SOURCE, file));
    assert.ok(files.includes('http/handlers.ts') && files.includes('runtime/turn/turn-runner.ts'), files.join(', '));
  });

  it('loads neither the tools nor TypeBox\'s compiler: they come with the first turn', () => {
    const loaded = loadedAtStartUp('server.ts');
    const files = [...loaded.keys()].map((file) => relative(SOURCE, file));
    // every tool declares its arguments through arguments.ts, and the registry gathers them
    assert.deepEqual(files.filter((file) => file === 'agent/tools/arguments.ts' || file === 'agent/tools/registry.ts'), []);
    const compiling = [...loaded].filter(([, packages]) => packages.some((name) => name === 'typebox/compile' || name === 'typebox/value'));
    assert.deepEqual(compiling.map(([file]) => relative(SOURCE, file)), []);
  });
});
