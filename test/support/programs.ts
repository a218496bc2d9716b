import assert from 'node:assert/strict';
import { findOnPath } from '../../src/exec/search/ripgrep-search.ts';

/** A host program as PATH finds it; tests never assume where a distribution puts it. */
export function programOnPath(name: string): string {
  const found = findOnPath(name, process.env.PATH);
  assert.ok(found, `${name} is not on PATH (${process.env.PATH})`);
  return found;
}
