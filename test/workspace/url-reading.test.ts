// One reading of a URL (CONTRACT.md §17, §21; issue 39 item 7): a repository URL is judged in the
// form git is handed. Attacked with a real loopback listener that git must never reach.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readUrlOnce } from '../../src/workspace/url-reading.ts';
import { resolveRepositorySource } from '../../src/workspace/repository-source.ts';
import { checkoutDirectory, runCheckout } from '../../src/workspace/checkout.ts';
import { hostWorkspaceCommands } from '../support/workspace-commands.ts';

/** A loopback listener standing for a host service: it counts every connection and answers nothing. */
async function loopbackService(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { port, connections: () => connections, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Each form names a public address to the WHATWG parser and the loopback service to another reader. */
const attacks = (port: number): string[] => [
  `http://1.2.3.4\\@127.0.0.1:${port}/r.git`,
  `https://1.2.3.4\\@127.0.0.1:${port}/r.git`,
  `http://1.2.3.4?@127.0.0.1:${port}/r.git`,
  `http://1.2.3.4#@127.0.0.1:${port}/r.git`,
  `http://a@1.2.3.4@127.0.0.1:${port}/r.git`,
  `http://1.2.3.4%40127.0.0.1:${port}/r.git`,
  `http://127.0.0.%31:${port}/r.git`,
  `http://1.2.3.4\t@127.0.0.1:${port}/r.git`,
  `git://1.2.3.4\\@127.0.0.1:${port}/r.git`,
  `ssh://1.2.3.4\\@127.0.0.1:${port}/r.git`,
];

test('a URL that two readers would split differently is refused before git runs, and the loopback service is never contacted', async (t) => {
  const service = await loopbackService();
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-url-reading-')));
  t.after(async () => {
    await service.close();
    rmSync(root, { recursive: true, force: true });
  });
  for (const [index, url] of attacks(service.port).entries()) {
    const outcome = await resolveRepositorySource({ url }, [root]).then(
      (source) => runCheckout(source, checkoutDirectory([root], `s${index}`), { commands: hostWorkspaceCommands([root]), signal: AbortSignal.timeout(20_000), onStep: () => () => {} }).then(() => 'cloned', (error: Error) => `failed: ${error.message}`),
      (error: Error) => `refused: ${error.message}`,
    );
    assert.match(outcome, /^refused: the repository URL (is refused|is malformed|contains whitespace)/, url);
  }
  assert.equal(service.connections(), 0, 'no clone reached the loopback service');
});

test('the forms every reader agrees on are accepted and handed on normalised', async () => {
  const cases: Array<[string, string]> = [
    ['HTTPS://Git.Example.test:443/team/r.git', 'https://git.example.test/team/r.git'],
    ['http://git.example.test:8080/r.git', 'http://git.example.test:8080/r.git'],
    ['ssh://git@git.example.test:2222/r.git', 'ssh://git@git.example.test:2222/r.git'],
    ['https://[2606:4700::1]/r.git', 'https://[2606:4700::1]/r.git'],
  ];
  for (const [given, judged] of cases) assert.equal((await resolveRepositorySource({ url: given }, ['/nonexistent'])).source, judged, given);
});

test('readUrlOnce: why each form is refused; a webhook URL may keep its query', () => {
  assert.match(readUrlOnce('https://h\\@127.0.0.1/', { query: true }).problem ?? '', /backslash/);
  assert.match(readUrlOnce('https://h%2e127.0.0.1/', { query: true }).problem ?? '', /not plain/);
  assert.match(readUrlOnce('https://h/ x', { query: true }).problem ?? '', /whitespace/);
  assert.match(readUrlOnce('https://h/r.git?x=1', { query: false }).problem ?? '', /query/);
  assert.match(readUrlOnce('https://h/r#f', { query: true }).problem ?? '', /fragment/);
  assert.match(readUrlOnce('h/r', { query: true }).problem ?? '', /absolute/);
  assert.match(readUrlOnce('://h/r', { query: true }).problem ?? '', /malformed/);
  assert.match(readUrlOnce('https://a@b@', { query: true }).problem ?? '', /not plain/);
  assert.match(readUrlOnce('https://h/r#', { query: true }).problem ?? '', /fragment/);
  assert.match(readUrlOnce('https://h:99999999/', { query: true }).problem ?? '', /not plain/);
  assert.match(readUrlOnce('https://h:70000/', { query: true }).problem ?? '', /malformed/);
  assert.equal(readUrlOnce('https://Hooks.Example.test/in?token=a', { query: true }).url?.href, 'https://hooks.example.test/in?token=a');
  assert.equal(readUrlOnce('https://hooks.example.test', { query: true }).url?.href, 'https://hooks.example.test/');
});
