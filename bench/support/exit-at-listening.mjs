// A preload for counting the instructions of one start (docs/BENCHMARKS.md, "Start-up on Node 24"):
// the process exits as soon as agentd prints its "listening" line.
//   valgrind --tool=callgrind --smc-check=all-non-file node --import ./bench/support/exit-at-listening.mjs bin/agentd.js serve …
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  const result = write(chunk, ...rest);
  if (String(chunk).includes('listening on')) setTimeout(() => process.exit(0), 0);
  return result;
};
