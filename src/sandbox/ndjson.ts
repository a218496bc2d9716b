/**
 * Splits a byte stream into lines of at most `maxLineBytes` bytes, without ever buffering more than
 * that: a line over the bound is reported once (`onOverflow`) and the splitter stops, because the
 * stream's framing can no longer be trusted.
 */
export class BoundedLineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private broken = false;

  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOverflow: () => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (!this.broken && start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      this.pendingBytes += end - start;
      if (this.pendingBytes > this.maxLineBytes) {
        this.broken = true;
        this.pending = [];
        this.onOverflow();
        return;
      }
      this.pending.push(chunk.subarray(start, end));
      if (newline === -1) return;
      const line = Buffer.concat(this.pending).toString('utf8');
      this.pending = [];
      this.pendingBytes = 0;
      start = newline + 1;
      if (line.trim() !== '') this.onLine(line);
    }
  }

  /** Bytes after the last newline when the stream ended (an unterminated line). */
  get hasPartialLine(): boolean {
    return this.pendingBytes > 0;
  }
}
