/** SGR codes (on, off) of the few styles the chat uses; only ever written to a colour terminal. */
const STYLES = {
  dim: [2, 22],
  bold: [1, 22],
  italic: [3, 23],
  underline: [4, 24],
  strikethrough: [9, 29],
  inverse: [7, 27],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  magenta: [35, 39],
  cyan: [36, 39],
} as const;

export type Style = keyof typeof STYLES;

export function paint(style: Style, text: string): string {
  const [on, off] = STYLES[style];
  return `\u001b[${on}m${text}\u001b[${off}m`;
}

/**
 * Text from the server (model output, tool output, prompts) is shown, never obeyed: escape
 * sequences and other control characters could clear the screen, fake a prompt or reach the
 * clipboard, so each becomes a visible ^X.
 */
export function inert(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (character) => `^${String.fromCharCode((character.charCodeAt(0) + 64) % 128)}`);
}
