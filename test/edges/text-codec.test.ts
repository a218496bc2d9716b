// The nullable forms of the text codec (store/text-codec.ts), used by the error, assistant text and
// response id columns: null stays null (not the string "null", not an escape), and text is encoded
// exactly as the plain form encodes it. Through the server: text-columns.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeNullableStoredText, decodeStoredText, encodeNullableStoredText, encodeStoredText, STORED_TEXT_MARKER } from '../../src/store/text-codec.ts';

const AWKWARD = ['plain', '', 'nul \u0000', 'lone \ud800', `${STORED_TEXT_MARKER}0000 marker first`, 'null'];

test('null passes through both nullable forms', () => {
  assert.equal(encodeNullableStoredText(null), null);
  assert.equal(decodeNullableStoredText(null), null);
});

test('text goes through the nullable forms exactly as through the plain ones', () => {
  for (const text of AWKWARD) {
    assert.equal(encodeNullableStoredText(text), encodeStoredText(text), JSON.stringify(text));
    assert.equal(decodeNullableStoredText(encodeStoredText(text)), text, JSON.stringify(text));
    assert.equal(decodeNullableStoredText(encodeStoredText(text)), decodeStoredText(encodeStoredText(text)));
  }
  assert.ok(!encodeNullableStoredText('nul \u0000')!.includes('\u0000'), 'NUL never reaches the column');
});
