import { createHash } from 'node:crypto';
import { closeSync, constants, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ApiError } from '../domain/errors.ts';
import type { CanonicalItem } from '../domain/canonical-item.ts';
import { closeDirectory, makeDirectories, openEntry } from './no-follow.ts';
import { removeTrees, type WorkspaceCommands } from './workspace-commands.ts';

export const MAX_ATTACHMENTS = 5;
export const MAX_IMAGES = 1;
const MAX_DECODED_BYTES = 20 * 1024 * 1024;
/** NAME_MAX: the schema's 255 characters can be 1,020 bytes of UTF-8, which no Linux filesystem takes. */
export const MAX_FILE_NAME_BYTES = 255;

export interface ImageInput {
  mimeType: string;
  data: string;
}
export interface FileInput {
  name: string;
  mimeType: string;
  data: string;
}

export interface DecodedAttachments {
  images: { mimeType: string; base64: string; bytes: number }[];
  files: { name: string; mimeType: string; bytes: Buffer }[];
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The bytes each image type starts with (CONTRACT.md §14); WebP also names itself at offset 8. */
const IMAGE_SIGNATURES: Record<string, (bytes: Buffer) => boolean> = {
  'image/jpeg': (bytes) => startsWith(bytes, [0xff, 0xd8, 0xff]),
  'image/png': (bytes) => startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  'image/gif': (bytes) => bytes.subarray(0, 6).toString('latin1') === 'GIF87a' || bytes.subarray(0, 6).toString('latin1') === 'GIF89a',
  'image/webp': (bytes) => bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP',
  'image/bmp': (bytes) => bytes.subarray(0, 2).toString('latin1') === 'BM',
};

/** A byte past the end reads undefined, which equals no signature byte. */
function startsWith(bytes: Buffer, signature: number[]): boolean {
  return signature.every((byte, index) => bytes[index] === byte);
}

/** A refusal naming the entry (`images[0]`, `files[2]`) in `details`, as CONTRACT.md §14 asks. */
function refuse(entry: string | null, message: string): ApiError {
  return new ApiError('invalid_attachment', entry ? `${entry}: ${message}` : message, entry ? { entry } : undefined);
}

/**
 * Checks the attachment rules of SPEC.md §2/§8 and CONTRACT.md §14 (1 image of a known type whose
 * bytes carry its signature, 5 attachments, 20 MiB decoded, valid base64, plain file names) and
 * decodes them. Each refusal is a 422 `invalid_attachment` naming the entry.
 */
export function decodeAttachments(images: ImageInput[] = [], files: FileInput[] = []): DecodedAttachments {
  if (images.length > MAX_IMAGES) throw refuse(`images[${MAX_IMAGES}]`, `at most ${MAX_IMAGES} image per turn`);
  if (images.length + files.length > MAX_ATTACHMENTS) {
    const extra = MAX_ATTACHMENTS - images.length;
    throw refuse(`files[${extra}]`, `at most ${MAX_ATTACHMENTS} attachments (images and files) per turn`);
  }
  let total = 0;
  const decode = (data: string, entry: string): Buffer => {
    if (data.length % 4 !== 0 || !BASE64.test(data)) throw refuse(entry, 'data is not valid base64');
    const bytes = Buffer.from(data, 'base64');
    total += bytes.length;
    if (total > MAX_DECODED_BYTES) throw refuse(entry, 'attachments exceed 20 MiB decoded in total');
    return bytes;
  };
  const decodedImages = images.map((image, index) => {
    const entry = `images[${index}]`;
    const bytes = decode(image.data, entry);
    const matches = IMAGE_SIGNATURES[image.mimeType];
    if (!matches) throw refuse(entry, 'mimeType must be image/jpeg, image/png, image/gif, image/webp or image/bmp');
    if (!matches(bytes)) throw refuse(entry, `the data does not start with the ${image.mimeType} signature`);
    return { mimeType: image.mimeType, base64: image.data, bytes: bytes.length };
  });
  const decodedFiles = files.map((file, index) => {
    const entry = `files[${index}]`;
    const name = basename(file.name);
    if (name !== file.name || name === '.' || name === '..' || name.includes('\0') || name.includes('/')) {
      throw refuse(entry, 'name must be a plain file name (no "/", "..", or NUL)');
    }
    if (Buffer.byteLength(name) > MAX_FILE_NAME_BYTES) throw refuse(entry, `name must be at most ${MAX_FILE_NAME_BYTES} bytes of UTF-8`);
    return { name, mimeType: file.mimeType, bytes: decode(file.data, entry) };
  });
  return { images: decodedImages, files: decodedFiles };
}

/** The digest that makes clientRequestId idempotency compare text and attachments. */
export function inputDigest(input: string, images: ImageInput[] = [], files: FileInput[] = []): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([input, images.map((image) => [image.mimeType, image.data]), files.map((file) => [file.name, file.mimeType, file.data])]));
  return hash.digest('hex');
}

/**
 * Files live in <cwd>/.agentd/attachments/<turnId>/ while the turn runs, then are removed. They
 * are written and removed where the tenant's commands run (`commands`): in its sandbox, as the
 * guest, whose files they then are; on the host (no sandbox) by writeFileBelow, so a `.agentd`
 * planted as a symlink out of the roots makes the turn fail instead of writing there. Never a
 * walk of the host's over a tree a guest can change meanwhile.
 */
export async function writeTurnFiles(cwd: string, turnId: string, files: DecodedAttachments['files'], commands: WorkspaceCommands): Promise<{ paths: string[]; cleanup: () => Promise<void> }> {
  if (files.length === 0) return { paths: [], cleanup: async () => {} };
  const turnPath = join(cwd, '.agentd', 'attachments', turnId);
  const removeTurnDirectory = () => removeTrees(commands, [turnPath]);
  const paths: string[] = [];
  try {
    for (const file of files) {
      const filePath = join(turnPath, file.name);
      await commands.writeFile(cwd, filePath, file.bytes);
      paths.push(filePath);
    }
  } catch (error) {
    // Only once a file was written is the directory known to be the turn's own.
    if (paths.length > 0) await removeTurnDirectory().catch(() => {});
    throw error;
  }
  return { paths, cleanup: removeTurnDirectory };
}

/**
 * The host's way to write a file below `base` (a boundary without a sandbox): every component
 * created or opened without following a symlink, the file created inside the open directory
 * (O_NOFOLLOW), directories 0700 and the file 0600.
 */
export function writeFileBelow(base: string, filePath: string, content: Buffer): void {
  const directory = makeDirectories(base, dirname(filePath), 0o700);
  try {
    const fd = openEntry(directory, basename(filePath), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
    try {
      writeFileSync(fd, content);
    } finally {
      closeSync(fd);
    }
  } finally {
    closeDirectory(directory);
  }
}

/** The user message as canonical input: the text, the image, and a note naming each attached file. */
export function userMessageItem(text: string, attachments: DecodedAttachments, filePaths: string[]): CanonicalItem {
  const content: Record<string, unknown>[] = [];
  const notes = attachments.files.map((file, index) => `[attached file ${file.name} (${file.mimeType}, ${file.bytes.length} bytes) at ${filePaths[index]}]`);
  const fullText = [text, ...notes].filter((part) => part.trim() !== '').join('\n');
  if (fullText) content.push({ type: 'input_text', text: fullText });
  for (const image of attachments.images) content.push({ type: 'input_image', detail: 'auto', image_url: `data:${image.mimeType};base64,${image.base64}` });
  return { type: 'message', role: 'user', content };
}
