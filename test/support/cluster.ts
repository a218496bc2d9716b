import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestBackend } from './backends.ts';
import { fakeProviderModels } from './server.ts';

/** Polls `probe` every 50 ms until it gives a value; fails naming `what` past the timeout. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The `agentd serve` arguments every instance of a test cluster shares: one database, one workspace, the fake's models. */
export function clusterArguments(backend: TestBackend, fakeBaseUrl: string): string[] {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-ws-')));
  const modelsFile = join(backend.stateDir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fakeBaseUrl)));
  return ['--state-dir', backend.stateDir, '--workspace-root', workspace, '--models-file', modelsFile, '--database-url', backend.databaseUrl!, '--cluster'];
}
