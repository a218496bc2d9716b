/** Budgets for what a tool hands back to the model, and the head-and-tail cap for long output. */

/** The most text any tool returns to the model in one call. */
export const MODEL_OUTPUT_LIMIT = 64 * 1024;

/**
 * Keeps the first and the last half of a stream that may be arbitrarily long, so both the start of
 * a command's output and its final error survive. Counted in UTF-16 code units.
 */
export class HeadTailBuffer {
  private head = '';
  private tail = '';
  private omitted = 0;

  constructor(private readonly limit: number = MODEL_OUTPUT_LIMIT) {}

  append(chunk: string): void {
    const headRoom = Math.ceil(this.limit / 2) - this.head.length;
    if (headRoom > 0) {
      this.head += chunk.slice(0, headRoom);
      chunk = chunk.slice(headRoom);
    }
    if (chunk === '') return;
    this.tail += chunk;
    const tailLimit = Math.floor(this.limit / 2);
    if (this.tail.length > tailLimit) {
      this.omitted += this.tail.length - tailLimit;
      this.tail = this.tail.slice(this.tail.length - tailLimit);
    }
  }

  get truncated(): boolean {
    return this.omitted > 0;
  }

  toString(): string {
    if (this.omitted === 0) return this.head + this.tail;
    return `${this.head}\n[… ${this.omitted} characters omitted …]\n${this.tail}`;
  }
}

/** Cuts `text` to `limit` characters with a note saying how to see more. */
export function truncateForModel(text: string, limit: number = MODEL_OUTPUT_LIMIT, hint = ''): { text: string; truncated: boolean } {
  if (text.length <= limit) return { text, truncated: false };
  const note = `\n[… output truncated after ${limit} characters${hint ? `; ${hint}` : ''} …]`;
  return { text: text.slice(0, limit) + note, truncated: true };
}
