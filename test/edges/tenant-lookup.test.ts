// Near misses of the tenant lookup (tenancy/token-lookup.ts): a bearer token selects its tenant
// only when it is that credential byte for byte; one byte short, long or changed, another case,
// white space, another Unicode normalisation or another tenant's token selects nothing or the other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { tenantForToken } from '../../src/tenancy/token-lookup.ts';
import { validateToken } from '../../src/config/token-file.ts';
import type { Tenant, TenantRegistry } from '../../src/config/tenant-registry.ts';

const TOKEN_A = 'tenant-a-token-0123456789abcdefghij';
const TOKEN_A2 = 'tenant-a-second-credential-0123456789';
const TOKEN_B = 'tenant-b-token-café-0123456789abcdefgh'; // é precomposed (U+00E9)

function tenant(id: string, tokens: string[]): Tenant {
  return { id, workspaceRoot: `/srv/${id}`, credentials: tokens.map((token, index) => ({ id: `${id}-${index}`, tokenFile: `/etc/${id}-${index}`, token })) };
}

const a = tenant('a', [TOKEN_A, TOKEN_A2]);
const b = tenant('b', [TOKEN_B]);
const registry: TenantRegistry = { version: 1, tenants: [a, b] };

test('each credential selects its own tenant, and only it', () => {
  assert.equal(tenantForToken(registry, TOKEN_A), a);
  assert.equal(tenantForToken(registry, TOKEN_A2), a, 'a second credential of the same tenant');
  assert.equal(tenantForToken(registry, TOKEN_B), b);
});

test('near misses select nothing', () => {
  for (const token of [TOKEN_A, TOKEN_B]) {
    for (const nearMiss of [
      token.slice(0, -1),
      token.slice(1),
      `${token}x`,
      `x${token}`,
      `${token} `,
      ` ${token}`,
      `${token}\n`,
      token.toUpperCase(),
      `${token.slice(0, -1)}${String.fromCharCode(token.charCodeAt(token.length - 1) ^ 1)}`,
      `${String.fromCharCode(token.charCodeAt(0) ^ 1)}${token.slice(1)}`,
      `${token}${token}`,
      '',
    ]) {
      assert.equal(tenantForToken(registry, nearMiss), null, JSON.stringify(nearMiss));
    }
  }
  assert.equal(tenantForToken(registry, TOKEN_B.normalize('NFD')), null, 'e plus a combining accent is other bytes');
  assert.equal(tenantForToken(registry, `${TOKEN_A}\0`), null);
});

test('any string other than a credential selects nothing (property)', () => {
  const credentials = new Set([TOKEN_A, TOKEN_A2, TOKEN_B]);
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.constantFrom(TOKEN_A, TOKEN_B).chain((token) => fc.integer({ min: 0, max: token.length }).map((cut) => token.slice(0, cut)))), (presented) => {
      if (credentials.has(presented)) return;
      assert.equal(tenantForToken(registry, presented), null, JSON.stringify(presented));
    }),
    { numRuns: 500 },
  );
});

test('a registry reloaded with other tokens forgets the old ones', () => {
  const reloaded: TenantRegistry = { version: 1, tenants: [tenant('a', [TOKEN_A2]), b] };
  assert.equal(tenantForToken(reloaded, TOKEN_A), null);
  assert.equal(tenantForToken(reloaded, TOKEN_A2)?.id, 'a');
  assert.equal(tenantForToken(registry, TOKEN_A), a, 'the old registry is unchanged');
});

test('SPEC §8 tenant token length: at least 32 bytes, counted in bytes; no white space anywhere', () => {
  for (const token of ['x'.repeat(32), 'é'.repeat(16), `${'€'.repeat(10)}xy`, '🦀'.repeat(8), 'x'.repeat(4096)]) {
    assert.equal(validateToken(token, 'test'), token, `${Buffer.byteLength(token)} bytes`);
  }
  // 31 bytes, however many characters: a count in characters would take 'é' × 15 plus one letter as 16
  for (const token of ['x'.repeat(31), `${'é'.repeat(15)}x`, `${'€'.repeat(10)}x`, `${'🦀'.repeat(7)}xyz`, '']) {
    assert.throws(() => validateToken(token, 'test'), /at least 32 bytes/, `${Buffer.byteLength(token)} bytes`);
  }
  for (const space of [' ', '\t', '\n', '\r', '\u00a0', '\u2028', '\u3000', '\ufeff']) {
    assert.throws(() => validateToken(`${'x'.repeat(16)}${space}${'x'.repeat(16)}`, 'test'), /white space/, JSON.stringify(space));
  }
});
