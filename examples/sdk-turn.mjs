// A turn through the agentd SDK: create a session, submit a prompt, print the answer as it
// streams, and answer approvals from the keyboard.
//
//   npm run build && node examples/sdk-turn.mjs "list the files here"
//   (AGENTD_URL defaults to http://127.0.0.1:4096; SERVICE_TOKEN is sent when set)
import { createInterface } from 'node:readline/promises';
import { createClient, isReplayReset } from 'agentd/client';

const client = createClient({ baseUrl: process.env.AGENTD_URL ?? 'http://127.0.0.1:4096', token: process.env.SERVICE_TOKEN || undefined });
const session = await client.createSession({ body: { title: 'SDK example' } });
const events = client.events({ sessionId: session.id });
await events.opened; // from here on nothing of the session is missed
const turn = await client.submitTurn(session.id, process.argv[2] ?? 'Say hello in five words.');
const keyboard = createInterface({ input: process.stdin, output: process.stdout });

for await (const event of events) {
  if (isReplayReset(event) || event.turnId !== turn.id) continue;
  if (event.type === 'response.text.delta') process.stdout.write(event.data.text);
  if (event.type === 'request.created') {
    const request = event.data;
    const decision = await keyboard.question(`\n${request.prompt}\n${request.options.join(' / ')}? `);
    await client.resolveRequest({ path: { id: request.id }, body: { decision: decision.trim() } });
  }
  if (event.type === 'turn.completed' || event.type === 'turn.failed' || event.type === 'turn.cancelled') break;
}
events.close();
keyboard.close();
const result = await client.waitForTurn(turn.id);
console.log(`\n[${result.turn.status}]`);
