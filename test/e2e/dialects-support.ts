import { before } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFakeServer, type FakeServerHarness } from '../support/harness.ts';

/**
 * useFakeServer with a notes.txt reading "the answer is 42" in the workspace: the file the dialect
 * tests have the model read, so that each tool round trip carries a known output.
 */
export function useFakeServerWithNotes(): FakeServerHarness {
  const harness = useFakeServer();
  before(() => writeFileSync(join(harness.server.workspace, 'notes.txt'), 'the answer is 42\n'));
  return harness;
}
