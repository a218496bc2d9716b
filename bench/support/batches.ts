/** Runs `work` for every index below `count`, at most `width` at a time; the results in index order. */
export async function inBatches<T>(count: number, width: number, work: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, count) }, async () => {
    while (next < count) {
      const index = next++;
      results[index] = await work(index);
    }
  }));
  return results;
}
