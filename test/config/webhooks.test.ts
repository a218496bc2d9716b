// --webhook-url, --webhook-secret-file, --allow-loopback-webhooks (CONTRACT.md §20): every refusal
// at start-up, named by its flag; the real binary exits 2 on them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, UsageError } from '../../src/config/config.ts';
import { loadWebhookConfig } from '../../src/config/webhooks.ts';
import { serverSecrets } from '../../src/config/server-secrets.ts';
import { agentdExit } from '../support/agentd-process.ts';

const cwd = mkdtempSync(join(tmpdir(), 'agentd-webhook-config-'));
const load = (args: string[]) => loadConfig(['--state-dir', join(cwd, 'state'), ...args], {}, cwd);
let files = 0;
function secret(content = 'a'.repeat(40), mode = 0o600): string {
  const path = join(cwd, `secret-${files++}`);
  writeFileSync(path, content, { mode });
  chmodSync(path, mode);
  return path;
}

describe('webhook flags', () => {
  it('read the URLs in order with the trimmed secret, and nothing without them', async () => {
    const config = await load(['--webhook-url', 'http://127.0.0.1:9/a?k=v', '--webhook-url', 'http://[::1]:9/b', '--webhook-secret-file', secret(`${'s'.repeat(33)}\n`), '--allow-loopback-webhooks']);
    assert.deepEqual(config.webhooks, { urls: ['http://127.0.0.1:9/a?k=v', 'http://[::1]:9/b'], secret: 's'.repeat(33), allowLoopback: true });
    assert.ok(serverSecrets(config).some((entry) => entry.path === config.webhookSecretFile), 'the secret file is one of the files no tool may read');
    assert.equal((await load([])).webhooks, null);
  });

  const refused: [string, string[], RegExp][] = [
    ['a URL without a secret file', ['--webhook-url', 'https://hooks.example.com/x'], /^--webhook-url: requires --webhook-secret-file/],
    ['a secret file without a URL', ['--webhook-secret-file', 'SECRET'], /^--webhook-secret-file: only valid with --webhook-url/],
    ['the loopback flag without a URL', ['--allow-loopback-webhooks'], /^--allow-loopback-webhooks: only valid with --webhook-url/],
    ['not a URL', ['--webhook-url', 'hooks.example.com/x', '--webhook-secret-file', 'SECRET'], /^--webhook-url: not an absolute URL$/],
    ['another scheme', ['--webhook-url', 'ftp://hooks.example.com/x', '--webhook-secret-file', 'SECRET'], /^--webhook-url: ftp: is not http: or https:$/],
    ['credentials in the URL', ['--webhook-url', 'https://user:pw@hooks.example.com/x', '--webhook-secret-file', 'SECRET'], /carries credentials/],
    ['a fragment', ['--webhook-url', 'https://hooks.example.com/x#frag', '--webhook-secret-file', 'SECRET'], /has a fragment/],
    ['a backslash before an @ (one parser reads another host)', ['--webhook-url', 'https://93.184.216.34\\@127.0.0.1/x', '--webhook-secret-file', 'SECRET'], /is refused: it contains a backslash/],
    ['percent-encoding in the host', ['--webhook-url', 'https://127.0.0.%31/x', '--webhook-secret-file', 'SECRET', '--allow-loopback-webhooks'], /is refused: its host part is not plain/],
    ['the same URL twice', ['--webhook-url', 'https://93.184.216.34/x', '--webhook-url', 'https://93.184.216.34/x', '--webhook-secret-file', 'SECRET'], /given more than once/],
    ['plain http without the loopback flag', ['--webhook-url', 'http://127.0.0.1:9/x', '--webhook-secret-file', 'SECRET'], /plain http:, allowed only for a loopback receiver/],
    ['plain http to a public address', ['--webhook-url', 'http://93.184.216.34/x', '--webhook-secret-file', 'SECRET', '--allow-loopback-webhooks'], /not a loopback address, and http: is only for a loopback receiver/],
    ['a loopback address without the flag', ['--webhook-url', 'https://127.0.0.1/x', '--webhook-secret-file', 'SECRET'], /127\.0\.0\.1 is a loopback address \(pass --allow-loopback-webhooks/],
    ['IPv6 loopback without the flag', ['--webhook-url', 'https://[::1]/x', '--webhook-secret-file', 'SECRET'], /::1 is a loopback address/],
    ['a name that resolves to loopback', ['--webhook-url', 'https://localhost/x', '--webhook-secret-file', 'SECRET'], /localhost resolves to .* loopback address/],
    ['a private address', ['--webhook-url', 'https://10.1.2.3/x', '--webhook-secret-file', 'SECRET'], /10\.1\.2\.3 is a private, link-local, metadata or otherwise refused address/],
    ['a private address with the loopback flag', ['--webhook-url', 'https://192.168.1.5/x', '--webhook-secret-file', 'SECRET', '--allow-loopback-webhooks'], /192\.168\.1\.5 is a private/],
    ['the metadata service', ['--webhook-url', 'https://169.254.169.254/latest', '--webhook-secret-file', 'SECRET'], /169\.254\.169\.254 is a private/],
    ['carrier-grade NAT', ['--webhook-url', 'https://100.64.0.1/x', '--webhook-secret-file', 'SECRET'], /100\.64\.0\.1 is a private/],
    ['loopback in IPv6 clothing', ['--webhook-url', 'https://[::ffff:127.0.0.1]/x', '--webhook-secret-file', 'SECRET'], /loopback address/],
    ['a private IPv6 address', ['--webhook-url', 'https://[fd00::1]/x', '--webhook-secret-file', 'SECRET', '--allow-loopback-webhooks'], /fd00::1 is a private/],
    ['a missing secret file', ['--webhook-url', 'https://93.184.216.34/x', '--webhook-secret-file', join(cwd, 'absent')], /^--webhook-secret-file: .*absent does not exist$/],
    ['a secret file others can read', ['--webhook-url', 'https://93.184.216.34/x', '--webhook-secret-file', 'OPEN'], /^--webhook-secret-file: .* must not be readable or writable by group or others/],
    ['a short secret', ['--webhook-url', 'https://93.184.216.34/x', '--webhook-secret-file', 'SHORT'], /^--webhook-secret-file: the token must be at least 32 bytes$/],
    ['a symlinked secret file', ['--webhook-url', 'https://93.184.216.34/x', '--webhook-secret-file', 'LINK'], /^--webhook-secret-file: .* is a symlink$/],
  ];
  for (const [name, args, message] of refused) {
    it(`refuse ${name}`, async () => {
      const link = join(cwd, `link-${files++}`);
      symlinkSync(secret(), link);
      const given = args.map((arg) => ({ SECRET: secret(), OPEN: secret('a'.repeat(40), 0o644), SHORT: secret('short'), LINK: link })[arg] ?? arg);
      await assert.rejects(load(given), (error: Error) => error instanceof UsageError && message.test(error.message));
    });
  }

  it('judge every address a name resolves to, and let a name that does not resolve now through (each delivery judges again)', async () => {
    const file = secret();
    const config = (answer: string[] | Error) => loadWebhookConfig({ urls: ['https://hooks.example.test/x'], secretFile: file, allowLoopback: false }, async () => {
      if (answer instanceof Error) throw answer;
      return answer;
    });
    assert.deepEqual((await config(['93.184.216.34']))?.urls, ['https://hooks.example.test/x']);
    await assert.rejects(config(['93.184.216.34', '10.0.0.7']), /hooks\.example\.test resolves to 10\.0\.0\.7 is a private/);
    assert.ok(await config(Object.assign(new Error('no such name'), { code: 'ENOTFOUND' })));
  });

  it('the real binary exits 2 on a refused flag, with a one-line message naming it', async () => {
    const state = join(cwd, 'exit-state');
    for (const [args, message] of [
      [['--webhook-url', 'https://10.0.0.1/hook', '--webhook-secret-file', secret()], /--webhook-url: https:\/\/10\.0\.0\.1 may not receive webhooks/],
      [['--webhook-url', 'http://localhost:9/hook', '--webhook-secret-file', secret()], /--webhook-url: http:\/\/localhost:9 is plain http:/],
      [['--webhook-url', 'https://localhost/hook', '--webhook-secret-file', secret()], /localhost resolves to .* loopback address/],
      [['--webhook-url', 'https://93.184.216.34/hook', '--webhook-secret-file', join(cwd, 'absent')], /--webhook-secret-file: .* does not exist/],
      [['--webhook-url', 'https://93.184.216.34/hook', '--webhook-secret-file', secret('a'.repeat(40), 0o640)], /--webhook-secret-file: .* group or others/],
    ] as [string[], RegExp][]) {
      const exit = await agentdExit(['--state-dir', state, ...args]);
      assert.equal(exit.code, 2, exit.stderr);
      assert.match(exit.stderr, message);
      assert.doesNotMatch(exit.stderr, /\/hook/, 'the URL\'s path (which may hold a secret) is not repeated');
    }
  });
});
