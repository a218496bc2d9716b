import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeStoredText, encodeStoredText, STORED_TEXT_MARKER } from '../../src/store/text-codec.ts';

const awkward = [
  'a\0b',
  '\0',
  'lone high \ud800 and lone low \udc00',
  'reversed pair \udc00\ud800',
  'pair 😀 beside a NUL \0',
  `${STORED_TEXT_MARKER} starts with the marker`,
  `marker ${STORED_TEXT_MARKER}0000 that looks like an escape, and \0`,
  '\ud800',
];

describe('stored text codec', () => {
  it('stores ordinary text unchanged, the same string', () => {
    for (const text of ['', 'plain', 'ünïcødé 😀', `marker inside ${STORED_TEXT_MARKER} is fine`]) {
      assert.equal(encodeStoredText(text), text);
      assert.equal(decodeStoredText(text), text);
    }
  });

  it('round-trips NUL, lone surrogates and the marker exactly', () => {
    for (const text of awkward) assert.equal(decodeStoredText(encodeStoredText(text)), text, JSON.stringify(text));
  });

  it('stores neither NUL nor lone surrogates (what PostgreSQL and UTF-8 drivers cannot hold)', () => {
    for (const text of awkward) {
      const stored = encodeStoredText(text);
      assert.ok(!stored.includes('\0'), JSON.stringify(stored));
      assert.ok(stored.isWellFormed(), JSON.stringify(stored));
      assert.equal(Buffer.from(stored, 'utf8').toString('utf8'), stored, 'survives UTF-8');
    }
  });

  it('decodes any prefix of a stored value to a prefix of the original', () => {
    const text = `x\0y\ud800z${STORED_TEXT_MARKER}😀\udfff`;
    const stored = encodeStoredText(text);
    for (let end = 1; end <= stored.length; end++) {
      const prefix = [...stored].slice(0, end).join('');
      assert.ok(text.startsWith(decodeStoredText(prefix)), `prefix of ${end}`);
    }
  });
});
