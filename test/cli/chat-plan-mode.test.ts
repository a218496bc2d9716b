/**
 * Plan mode in the terminal client as a person goes through it (tmux): /plan on, the model's plan
 * shown as Markdown, "request changes" with words, the revised plan approved, then the work
 * carried out; the footer says which mode the session is in all along.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fakeProviderModels, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { toolOutputSent, useServerOnFakeProvider } from '../support/harness.ts';
import { tmuxChat, type TmuxChat } from './tmux-chat.ts';

describe('agentd chat, plan mode (tmux)', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  const chats: TmuxChat[] = [];
  after(() => chats.forEach((chat) => chat.kill()));
  const started = useServerOnFakeProvider({ models: (baseUrl) => fakeProviderModels(baseUrl, { contextWindow: 200_000 }) });
  before(() => ({ fake, server } = started));

  it('after "request changes" the plan is proposed again; approving it leaves plan mode and the work proceeds', async () => {
    const chat = tmuxChat(`agentd-chat-plan-${process.pid}`, { joinWrappedLines: true });
    chats.push(chat);
    await chat.start(server.url, server.workspace);
    const plan = (text: string, callId: string) => ({ kind: 'reply' as const, toolCalls: [{ name: 'exit_plan_mode', arguments: JSON.stringify({ plan: text }), callId }] });
    fake.enqueue({ kind: 'reply', text: 'Ready.' });
    chat.send('-l', 'hello');
    chat.send('Enter');
    await chat.waitForScreen(/Ready\./);
    chat.send('-l', '/plan');
    chat.send('Enter');
    await chat.waitForScreen(/─ fake-responses · plan mode · /);

    fake.enqueue(
      plan('# Plan\n\n- **make** `planned.txt`', 'call_plan_1'),
      plan('# Plan, revised\n\n- make `planned.txt`\n- then check it', 'call_plan_2'),
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', 'planned.txt'] }), callId: 'call_make' }] },
      { kind: 'reply', text: 'Plan carried out.' },
    );
    chat.send('-l', 'make planned.txt, plan first');
    chat.send('Enter');
    await chat.waitForScreen(/\[1\] approve {2}\[2\] request_changes {2}\[3\] cancel/);
    // the plan is Markdown, rendered: no `#`, `**` or backticks left
    assert.match(chat.screen(), /^ {2}Plan$/m);
    assert.doesNotMatch(chat.screen(), /\*\*make\*\*/);
    chat.send('2');
    await chat.waitForScreen(/^your words: *$/m);
    chat.send('-l', 'check the file after');
    chat.send('Enter');
    await chat.waitForScreen(/Plan, revised[\s\S]*\[1\] approve {2}\[2\] request_changes {2}\[3\] cancel/);
    assert.match(toolOutputSent(fake.requests, 'call_plan_1') ?? '', /asked for changes[\s\S]*check the file after/);
    assert.equal((await server.request('GET', `/v1/sessions/${await sessionId()}`)).json.planMode, true, 'still planning after request changes');
    assert.equal(existsSync(join(server.workspace, 'planned.txt')), false);

    chat.send('1');
    await chat.waitForScreen(/\[1\] allow_once/);
    chat.send('1');
    await chat.waitForScreen(/Plan carried out\./);
    assert.equal(existsSync(join(server.workspace, 'planned.txt')), true, 'the approved plan was carried out');
    assert.equal((await server.request('GET', `/v1/sessions/${await sessionId()}`)).json.planMode, false);
    await chat.waitForScreen(/Plan carried out\.[\s\S]*─ fake-responses · default mode · /);
  });

  const sessionId = async () => (await server.request('GET', '/v1/sessions?limit=1')).json.data[0].id as string;
});
