import { readFileSync } from 'node:fs';

/**
 * The JSON document of an operator's configuration file (--mcp-config, --permissions-file), or a
 * call of `fail` with why it could not be read: missing, a directory, unreadable, not JSON.
 */
export function readJsonConfigFile(file: string, fail: (message: string) => never): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return fail(code === 'ENOENT' ? 'the file does not exist' : code === 'EISDIR' ? 'is a directory, not a file' : `cannot be read (${code ?? 'error'})`);
  }
  try {
    return JSON.parse(text);
  } catch {
    return fail('is not valid JSON');
  }
}
