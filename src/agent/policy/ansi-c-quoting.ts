/**
 * The value of a bash `$'…'` string. `index` points just after the opening quote; returns the
 * decoded text and the index after the closing quote, or null when the string never closes.
 */
const SIMPLE_ESCAPES: Record<string, string> = {
  a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v',
  '\\': '\\', "'": "'", '"': '"', '?': '?',
};

export function readAnsiCQuoted(source: string, index: number): { value: string; end: number } | null {
  let value = '';
  while (index < source.length) {
    const char = source[index];
    if (char === "'") return { value, end: index + 1 };
    if (char !== '\\') {
      value += char;
      index++;
      continue;
    }
    const escape = source[index + 1];
    if (escape === undefined) return null;
    const rest = source.slice(index + 1);
    const octal = /^[0-7]{1,3}/.exec(rest);
    const hex = /^x([0-9A-Fa-f]{1,2})/.exec(rest);
    const unicode = /^u([0-9A-Fa-f]{1,4})/.exec(rest) ?? /^U([0-9A-Fa-f]{1,8})/.exec(rest);
    if (Object.hasOwn(SIMPLE_ESCAPES, escape)) {
      value += SIMPLE_ESCAPES[escape];
      index += 2;
    } else if (octal) {
      value += String.fromCharCode(parseInt(octal[0], 8) & 0xff);
      index += 1 + octal[0].length;
    } else if (hex) {
      value += String.fromCharCode(parseInt(hex[1], 16));
      index += 1 + hex[0].length;
    } else if (unicode) {
      const codePoint = parseInt(unicode[1], 16);
      value += codePoint <= 0x10ffff ? String.fromCodePoint(codePoint) : '';
      index += 1 + unicode[0].length;
    } else if (escape === 'c' && source[index + 2] !== undefined) {
      value += String.fromCharCode(source.charCodeAt(index + 2) & 0x1f);
      index += 3;
    } else {
      value += `\\${escape}`;
      index += 2;
    }
  }
  return null;
}
