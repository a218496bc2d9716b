/**
 * Glob patterns as ripgrep's `--glob` understands them, for the JavaScript search fallback:
 * `*`, `?`, `**`, `[...]`, `{a,b}`, and a leading `!` to exclude. A pattern without a slash
 * matches a file's base name at any depth; one with a slash matches the path from the search root.
 */

export interface GlobFilter {
  matches(relativePath: string): boolean;
}

export function compileGlob(glob: string): GlobFilter {
  const exclude = glob.startsWith('!');
  const pattern = exclude ? glob.slice(1) : glob;
  const anchored = pattern.includes('/');
  const regex = new RegExp(`^${translate(pattern.replace(/^\//, ''))}$`);
  return {
    matches(relativePath) {
      const subject = anchored ? relativePath : relativePath.slice(relativePath.lastIndexOf('/') + 1);
      return regex.test(subject) !== exclude;
    },
  };
}

function translate(pattern: string): string {
  let out = '';
  let braceDepth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '*' && pattern[i + 1] === '*') {
      const slashFollows = pattern[i + 2] === '/';
      out += slashFollows ? '(?:.*/)?' : '.*';
      i += slashFollows ? 2 : 1;
    } else if (char === '*') {
      out += '[^/]*';
    } else if (char === '?') {
      out += '[^/]';
    } else if (char === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close === -1) {
        out += '\\[';
        continue;
      }
      const body = pattern.slice(i + 1, close).replace(/^!/, '^').replace(/\\/g, '\\\\');
      out += `[${body}]`;
      i = close;
    } else if (char === '{') {
      braceDepth++;
      out += '(?:';
    } else if (char === '}' && braceDepth > 0) {
      braceDepth--;
      out += ')';
    } else if (char === ',' && braceDepth > 0) {
      out += '|';
    } else {
      out += char.replace(/[.+^$()|\\\]{}]/g, '\\$&');
    }
  }
  return out;
}
