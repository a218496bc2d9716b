// Near misses of the attachment rules (workspace/attachments.ts, SPEC §8, CONTRACT §14): each image
// signature exact and one byte off, the counts at the limit and one past, base64 spellings, and
// plain file names against their look-alikes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeAttachments, inputDigest, MAX_ATTACHMENTS, MAX_FILE_NAME_BYTES, MAX_IMAGES, type FileInput, type ImageInput } from '../../src/workspace/attachments.ts';
import { ApiError } from '../../src/domain/errors.ts';

function refusedAt(run: () => unknown, entry: string, message: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ApiError, String(error));
    assert.equal(error.code, 'invalid_attachment');
    assert.deepEqual(error.details, { entry });
    assert.match(error.message, message);
    return true;
  });
}

const image = (mimeType: string, bytes: number[] | Buffer): ImageInput => ({ mimeType, data: Buffer.from(bytes).toString('base64') });
const file = (name: string, data = 'eA=='): FileInput => ({ name, mimeType: 'text/plain', data });

const SIGNATURES: Array<[string, number[]]> = [
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['image/gif', [...Buffer.from('GIF87a')]],
  ['image/gif', [...Buffer.from('GIF89a')]],
  ['image/webp', [...Buffer.from('RIFF'), 1, 2, 3, 4, ...Buffer.from('WEBP')]],
  ['image/bmp', [...Buffer.from('BM')]],
];

test('each image signature passes exactly, and fails with any one of its bytes changed or the last one missing', () => {
  for (const [mimeType, signature] of SIGNATURES) {
    const bytes = [...signature, 0, 0];
    assert.deepEqual(decodeAttachments([image(mimeType, bytes)]).images, [{ mimeType, base64: Buffer.from(bytes).toString('base64'), bytes: bytes.length }], mimeType);
    assert.equal(decodeAttachments([image(mimeType, signature)]).images.length, 1, `${mimeType}: the signature alone`);
    refusedAt(() => decodeAttachments([image(mimeType, signature.slice(0, -1))]), 'images[0]', /signature/);
    for (let index = 0; index < signature.length; index++) {
      if (mimeType === 'image/webp' && index >= 4 && index < 8) continue; // the RIFF size, any value
      const changed = [...signature];
      changed[index] ^= 0x20; // flips case for letters, and changes every other byte
      refusedAt(() => decodeAttachments([image(mimeType, [...changed, 0])]), 'images[0]', /signature/);
    }
  }
  refusedAt(() => decodeAttachments([image('image/gif', [...Buffer.from('GIF88a')])]), 'images[0]', /signature/);
});

test('only the five image types, spelled exactly', () => {
  for (const mimeType of ['image/jpg', 'image/PNG', 'Image/png', 'image/png ', 'image/svg+xml', 'image/tiff', 'image/x-png', 'text/plain']) {
    refusedAt(() => decodeAttachments([image(mimeType, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])]), 'images[0]', /mimeType must be/);
  }
});

test('1 image and 5 attachments are accepted; 2 images or 6 attachments are not', () => {
  assert.equal(MAX_IMAGES, 1);
  assert.equal(MAX_ATTACHMENTS, 5);
  const png = image('image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const files = (count: number) => Array.from({ length: count }, (_, index) => file(`f${index}.txt`));
  assert.equal(decodeAttachments([png], files(4)).files.length, 4);
  assert.equal(decodeAttachments([], files(5)).files.length, 5);
  refusedAt(() => decodeAttachments([png, png]), 'images[1]', /at most 1 image/);
  refusedAt(() => decodeAttachments([png], files(5)), 'files[4]', /at most 5 attachments/);
  refusedAt(() => decodeAttachments([], files(6)), 'files[5]', /at most 5 attachments/);
});

test('20 MiB decoded in total is accepted and one byte more is not (through the server: test/e2e/attachments-turns.test.ts)', () => {
  const half = Buffer.alloc(10 * 1024 * 1024, 0x61).toString('base64');
  const halfPlusOne = Buffer.alloc(10 * 1024 * 1024 + 1, 0x61).toString('base64');
  assert.equal(decodeAttachments([], [file('a', half), file('b', half)]).files.length, 2);
  refusedAt(() => decodeAttachments([], [file('a', half), file('b', halfPlusOne)]), 'files[1]', /exceed 20 MiB decoded in total/);
});

test('base64: padded standard alphabet only', () => {
  for (const data of ['', 'QQ==', 'QUI=', 'QUJD', 'ab+/']) assert.equal(decodeAttachments([], [file('a', data)]).files.length, 1, data);
  for (const data of ['QQ=', 'Q===', 'QQ', 'QUJ', 'ab-_', 'QU JD', 'QUJD\n', '=QUJ', 'QQ==QQ==', 'QUJD====']) {
    refusedAt(() => decodeAttachments([], [file('a', data)]), 'files[0]', /not valid base64/);
  }
});

test('file names: a plain name passes, and only a plain name', () => {
  for (const name of ['a', '.hidden', '...', 'a..b', '..a', 'a b', 'ü.txt', 'back\\slash']) assert.equal(decodeAttachments([], [file(name)]).files[0].name, name);
  for (const name of ['.', '..', 'a/b', '/a', 'a/', './a', '../a', 'a\0b', 'dir/..']) refusedAt(() => decodeAttachments([], [file(name)]), 'files[0]', /plain file name/);
});

test('file names: 255 bytes of UTF-8 pass, 256 do not, however few the characters', () => {
  assert.equal(MAX_FILE_NAME_BYTES, 255);
  for (const name of ['x'.repeat(255), `${'é'.repeat(127)}x`, `${'€'.repeat(85)}`, `${'🦀'.repeat(63)}xyz`]) {
    assert.equal(Buffer.byteLength(name), 255);
    assert.equal(decodeAttachments([], [file(name)]).files[0].name, name);
  }
  // 128 two-byte characters were accepted (the schema counts 255 characters) and the turn then
  // failed internal_error with ENAMETOOLONG
  for (const name of ['x'.repeat(256), 'é'.repeat(128), `${'€'.repeat(85)}x`, '🦀'.repeat(64)]) {
    assert.equal(Buffer.byteLength(name), 256);
    refusedAt(() => decodeAttachments([], [file(name)]), 'files[0]', /at most 255 bytes/);
  }
});

test('a turn without images or files (the fields left out of its body) has none, and digests as empty lists', () => {
  assert.deepEqual(decodeAttachments(), { images: [], files: [] });
  assert.deepEqual(decodeAttachments(undefined, [file('a.txt')]).images, []);
  assert.deepEqual(decodeAttachments([], undefined).files, []);
  assert.equal(inputDigest('hello'), inputDigest('hello', [], []));
  assert.equal(inputDigest('hello', undefined, [file('a.txt')]), inputDigest('hello', [], [file('a.txt')]));
  assert.notEqual(inputDigest('hello'), inputDigest('hello', [image('image/bmp', [...Buffer.from('BM')])]), 'an image changes the digest');
});
