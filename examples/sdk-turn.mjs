// A turn through the agentd SDK: create a session, submit a prompt, print the answer as it
// streams, and answer approvals and plan questions from standard input.
//
//   npm run build && node examples/sdk-turn.mjs "list the files here"
//   (AGENTD_URL defaults to http://127.0.0.1:4096; SERVICE_TOKEN is sent when set)
//
// An answer is an option's name or number; anything else is asked again. Ctrl-C cancels the turn,
// and so does the end of standard input when an answer is needed (`… < /dev/null`, a pipe that
// ran dry): a turn is never left waiting for someone who is gone.
import { createInterface } from 'node:readline';
import { AgentdError, createClient, isReplayReset, TERMINAL_TURN_EVENTS } from 'agentd/client';

/** Options whose answer takes the user's own words as well. */
const WITH_WORDS = new Set(['custom', 'request_changes']);

const client = createClient({ baseUrl: process.env.AGENTD_URL ?? 'http://127.0.0.1:4096', token: process.env.SERVICE_TOKEN || undefined });
const session = await client.createSession({ body: { title: 'SDK example' } });
const events = client.events({ sessionId: session.id });
await events.opened; // from here on nothing of the session is missed
const submitted = client.submitTurn(session.id, process.argv[2] ?? 'Say hello in five words.');

// Lines are read through the iterator from the start, so lines piped in before a question is
// asked are kept for it rather than lost.
const input = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY === true });
const lines = input[Symbol.asyncIterator]();

let cancelledBy = null;
let stopAsking;
const stopped = new Promise((resolve) => (stopAsking = resolve));
function cancelTurn(reason) {
  if (cancelledBy) return;
  cancelledBy = reason;
  stopAsking();
  process.stdout.write(`\n[${reason}: cancelling the turn]\n`);
  submitted
    .then((turn) => client.cancelTurn({ path: { id: turn.id } }))
    .catch((error) => console.error(`could not cancel: ${error.message}`));
}
// Listening before the turn exists, so no Ctrl-C can leave it running. A terminal in raw mode
// hands Ctrl-C to readline; otherwise it arrives as a signal.
input.on('SIGINT', () => cancelTurn('Ctrl-C'));
process.on('SIGINT', () => cancelTurn('Ctrl-C'));
const turn = await submitted;

/** The next line, or null when input has ended or the turn is being cancelled. */
async function nextLine(question) {
  process.stdout.write(question);
  const line = await Promise.race([lines.next(), stopped]);
  if (line === undefined) return null;
  if (line.done) {
    cancelTurn('input ended before an answer');
    return null;
  }
  return line.value.trim();
}

async function answer(request) {
  const choices = request.options.map((option, index) => `${index + 1}) ${option}`).join('  ');
  for (;;) {
    const reply = await nextLine(`\n${request.prompt}\n${choices}? `);
    if (reply === null) return;
    const decision = request.options[Number(reply) - 1] ?? request.options.find((option) => option === reply);
    if (decision === undefined) {
      process.stdout.write(`"${reply}" is not one of the options; answer with a name or a number.`);
      continue;
    }
    const value = WITH_WORDS.has(decision) ? await nextLine('In your words: ') : undefined;
    if (value === null) return;
    try {
      await client.resolveRequest({ path: { id: request.id }, body: value === undefined ? { decision } : { decision, value } });
      return;
    } catch (error) {
      // answered elsewhere, or withdrawn by a cancel: nothing is waiting for this answer any more
      if (error instanceof AgentdError && (error.code === 'request_already_resolved' || error.code === 'request_not_found')) return;
      if (!(error instanceof AgentdError) || error.status !== 422) throw error;
      process.stdout.write(`${error.message}.`);
    }
  }
}

for await (const event of events) {
  if (isReplayReset(event) || event.turnId !== turn.id) continue;
  if (event.type === 'response.text.delta') process.stdout.write(event.data.text);
  if (event.type === 'request.created') await answer(event.data);
  if (TERMINAL_TURN_EVENTS.has(event.type)) break;
}
events.close();
input.close();
const result = await client.waitForTurn(turn.id);
console.log(`\n[${result.turn.status}]`);
process.exitCode = result.turn.status === 'completed' ? 0 : cancelledBy === 'Ctrl-C' ? 130 : 1;
