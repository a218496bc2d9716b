/**
 * The Python client (clients/python, CONTRACT.md §22): generated from /openapi.json like the
 * TypeScript SDK (a test fails when the committed module drifts from the served document),
 * installed with pip (--no-index: its build backend is its own, standard library only) into a fresh venv of the machine's python3, and run
 * against a real agentd on the fake provider (test/client/python/first_session.py).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { useFakeServer } from '../support/harness.ts';
import { PYTHON_GENERATED_FILE, renderPythonClient } from '../../scripts/generate-python-client.ts';
import { hasJsonOrStreamSuccess } from '../../scripts/generate-client-types.ts';

const run = promisify(execFile);
const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));
const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('the Python client', () => {
  const harness = useFakeServer();
  let scratch: string;
  let python: string;

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'agentd-python-'));
    // a copy: importing the build backend would leave __pycache__ in the checkout
    cpSync(join(REPOSITORY, 'clients/python'), join(scratch, 'source'), { recursive: true });
    await run('python3', ['-m', 'venv', join(scratch, 'venv')]);
    python = join(scratch, 'venv/bin/python');
    await run(python, ['-m', 'pip', 'install', '--quiet', '--no-index', join(scratch, 'source')], { env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('is exactly what the served /openapi.json generates (run `npm run build` after changing the contract)', async () => {
    const served = (await harness.server.request('GET', '/openapi.json')).json;
    assert.equal(readFileSync(PYTHON_GENERATED_FILE, 'utf8'), renderPythonClient(served));
  });

  it('installs as agentd-client with py.typed, every operation a snake_case method', async () => {
    const served = (await harness.server.request('GET', '/openapi.json')).json;
    // every operation with a success answer (the protocol endpoints /mcp and /acp have none: no method)
    const operations = Object.values<any>(served.paths).flatMap((methods) => Object.values<any>(methods)).filter(hasJsonOrStreamSuccess).map((operation) => operation.operationId as string);
    assert.ok(operations.includes('getTurnResult'));
    const { stdout } = await run(python, ['-c', [
      'import json, pathlib, importlib.metadata as metadata, agentd_client',
      'print(json.dumps({"name": metadata.metadata("agentd-client")["Name"], "typed": pathlib.Path(agentd_client.__file__).with_name("py.typed").exists(), "methods": [name for name in dir(agentd_client.AgentdClient) if not name.startswith("_")]}))',
    ].join('\n')]);
    const installed = JSON.parse(stdout);
    assert.equal(installed.name, 'agentd-client');
    assert.equal(installed.typed, true);
    const snake = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
    for (const operationId of operations) assert.ok(installed.methods.includes(snake(operationId)), operationId);
  });

  it('drives a first session: typed events resumed by Last-Event-ID, a structured result, an approval answered twice, errors with the envelope', async () => {
    harness.fake.enqueue(
      { kind: 'reply', text: 'the directory is empty' },
      { kind: 'reply', text: '{"files": 0}' },
      { kind: 'reply', toolCalls: [shellCall('call_notes', ['touch', 'notes.txt'])] },
      { kind: 'reply', text: 'done' },
    );
    const { stdout, stderr } = await run(python, [join(REPOSITORY, 'test/client/python/first_session.py'), harness.server.url], { cwd: scratch, timeout: 120_000 }).catch((error) => {
      throw new Error(`first_session.py failed:\n${error.stdout}\n${error.stderr}`);
    });
    assert.match(stdout, /python client: all checks passed/, stderr);
  });
});
