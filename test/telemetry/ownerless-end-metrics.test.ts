/**
 * agentd_turns_total counts every turn that reached a terminal status, the ones no owner ended
 * included: a turn a killed server left running, marked failed `interrupted` by the restart
 * (SPEC.md §6). Before, only an owner's end was counted, so after a crash the metric said fewer
 * turns had failed than the turn records did. (A cluster's sweep: test/e2e/cluster-takeover-bound.test.ts.)
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BACKENDS, createBackend } from '../support/backends.ts';
import { fakeProviderModels } from '../support/server.ts';
import { startFakeProvider } from '../support/fake-provider.ts';
import { startAgentd } from '../support/agentd-process.ts';
import { until } from '../support/cluster.ts';
import { http } from '../support/http.ts';
import { metricsUrlOf, sample } from './prometheus-text.ts';

describe('turns ended by a restart in agentd_turns_total', () => {
  for (const backend of BACKENDS) {
    it(`counts the turn a killed server left running once the restart marks it failed, on ${backend}`, async () => {
      const fake = await startFakeProvider();
      const store = await createBackend(backend);
      const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-ws-')));
      const modelsFile = join(store.stateDir, 'models.json');
      writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
      const args = ['--state-dir', store.stateDir, '--workspace-root', workspace, '--models-file', modelsFile, '--metrics-port', '0', ...(store.databaseUrl ? ['--database-url', store.databaseUrl] : [])];
      try {
        const first = await startAgentd(args);
        const session = (await http('POST', `${first.url}/v1/sessions`, { body: {} })).json;
        fake.enqueue({ kind: 'hang', afterText: 'working' });
        const turn = (await http('POST', `${first.url}/v1/sessions/${session.id}/turns`, { body: { input: 'never finished' } })).json;
        await until('the turn to run', async () => ((await http('GET', `${first.url}/v1/turns/${turn.id}`)).json.status === 'running' ? true : undefined));
        await first.kill();

        const second = await startAgentd(args);
        try {
          assert.deepEqual([(await http('GET', `${second.url}/v1/turns/${turn.id}`)).json.status, (await http('GET', `${second.url}/v1/turns/${turn.id}`)).json.error], ['failed', 'interrupted']);
          const metrics = await http('GET', await until('the metrics address', async () => metricsUrlOf(second.stdout())));
          assert.equal(metrics.status, 200);
          assert.equal(sample(metrics.text, 'agentd_turns_total', { status: 'failed' }), 1);
          assert.equal(sample(metrics.text, 'agentd_turn_duration_seconds_count'), 0, 'its duration is another process\'s to know');
        } finally {
          await second.kill();
        }
      } finally {
        await fake.close();
        await store.drop();
      }
    });
  }
});
