/**
 * `agentd/client/ai-sdk` (CONTRACT.md §22) driven by the AI SDK's own chat machinery (`AbstractChat`
 * of the real `ai` package, in Node) against a real agentd on the fake provider: text, reasoning and
 * a tool call stream into the assistant message, the approval is a `tool-approval-request` answered
 * with the SDK's `addToolApprovalResponse`, `reconnectToStream` resumes by Last-Event-ID; bad input
 * (an approval answered twice, a stream id from another server, a regenerate) is an error, never a hang.
 * And a user's file importing the transport from the package's published types compiles under strict.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AbstractChat, lastAssistantMessageIsCompleteWithApprovalResponses, type ChatState, type ChatStatus, type UIMessage, type UIMessageChunk } from 'ai';
import { agentdChatTransport } from '../../src/client/ai-sdk.ts';
import { useFakeServer } from '../support/harness.ts';
import { waitForTurn } from '../support/server.ts';

const REPOSITORY = new URL('../..', import.meta.url).pathname;
const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

/** The chat state a framework would keep (React's, Vue's…): here plain arrays. */
class PlainState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (message: UIMessage) => void this.messages.push(message);
  popMessage = () => void this.messages.pop();
  replaceMessage = (index: number, message: UIMessage) => void (this.messages[index] = message);
  snapshot = <T,>(thing: T): T => structuredClone(thing);
}

class NodeChat extends AbstractChat<UIMessage> {
  constructor(init: ConstructorParameters<typeof AbstractChat<UIMessage>>[0]) {
    super(init);
  }
}

function newChat(transport: ReturnType<typeof agentdChatTransport>) {
  const state = new PlainState();
  const chat = new NodeChat({ transport, state, sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses } as never);
  return { chat, state };
}

/** Waits (polling the chat's own state) until `test` holds; the suite's timeout bounds it. */
async function until(test: () => boolean): Promise<void> {
  while (!test()) await new Promise((resolve) => setTimeout(resolve, 20));
}

const partsOf = (state: PlainState) => state.messages.at(-1)?.parts ?? [];
const textOf = (state: PlainState) => partsOf(state).flatMap((part: any) => (part.type === 'text' ? [part.text] : [])).join('');

async function readAll(stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<UIMessageChunk>) chunks.push(chunk);
  return chunks;
}

describe('agentdChatTransport with the AI SDK chat', () => {
  const harness = useFakeServer();

  it('streams reasoning, text and a tool call; the approval is answered with addToolApprovalResponse and the turn goes on', async () => {
    const { fake, server } = harness;
    fake.enqueue(
      { kind: 'reply', reasoning: 'a file is wanted', toolCalls: [shellCall('call_notes', ['touch', 'notes.txt'])] },
      { kind: 'reply', text: 'notes.txt is there' },
    );
    const { chat, state } = newChat(agentdChatTransport({ baseUrl: server.url }));
    await chat.sendMessage({ text: 'Create notes.txt' });
    const asked: any = partsOf(state).find((part: any) => part.type === 'dynamic-tool');
    assert.equal(asked?.state, 'approval-requested', JSON.stringify(partsOf(state)));
    assert.equal(asked.toolName, 'shell');
    assert.deepEqual(asked.input, { command: ['touch', 'notes.txt'] });
    assert.ok(partsOf(state).some((part: any) => part.type === 'reasoning' && part.text === 'a file is wanted'));
    assert.equal(existsSync(join(server.workspace, 'notes.txt')), false, 'nothing ran before the approval');

    await chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
    await until(() => state.status === 'ready' && textOf(state) === 'notes.txt is there');
    const ran: any = partsOf(state).find((part: any) => part.type === 'dynamic-tool');
    assert.equal(ran.state, 'output-available');
    assert.equal(existsSync(join(server.workspace, 'notes.txt')), true);
    assert.equal(state.messages.length, 2, 'one user message, one assistant message that went on after the approval');
  });

  it('a denied approval reaches the model as a denial, with its reason', async () => {
    const { fake, server } = harness;
    fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_rm', ['rm', '-rf', 'build'])] }, { kind: 'reply', text: 'I will not' });
    const { chat, state } = newChat(agentdChatTransport({ baseUrl: server.url }));
    await chat.sendMessage({ text: 'Clean up' });
    const asked: any = partsOf(state).find((part: any) => part.type === 'dynamic-tool');
    await chat.addToolApprovalResponse({ id: asked.approval.id, approved: false, reason: 'keep the build' });
    await until(() => state.status === 'ready' && textOf(state) === 'I will not');
    assert.equal((partsOf(state).find((part: any) => part.type === 'dynamic-tool') as any).state, 'output-denied');
    assert.match(harness.toolOutputSent('call_rm') ?? '', /keep the build/);
  });

  it('an approval answered twice (already answered elsewhere) is an error in the chat, not a hang', async () => {
    const { fake, server } = harness;
    fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_twice', ['touch', 'twice.txt'])] }, { kind: 'reply', text: 'done' });
    const { chat, state } = newChat(agentdChatTransport({ baseUrl: server.url }));
    await chat.sendMessage({ text: 'Touch twice.txt' });
    const asked: any = partsOf(state).find((part: any) => part.type === 'dynamic-tool');
    const first = await harness.resolve(asked.approval.id, { decision: 'allow_once' });
    assert.equal(first.status, 200);
    await chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
    await until(() => state.status === 'error');
    assert.match(String(state.error?.message), /request_already_resolved/);
    await waitForTurn(server, first.json.turnId); // its next model request takes its own reply, not the next test's
  });

  it('reconnectToStream resumes by Last-Event-ID: every delta once, in order', async () => {
    const { fake, server } = harness;
    const words = Array.from({ length: 30 }, (_, index) => `w${index}`);
    fake.enqueue({ kind: 'reply', text: words.join(' '), chunkDelayMs: 15 });
    const transport = agentdChatTransport({ baseUrl: server.url });
    const user: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Count' }] };
    const stream = await transport.sendMessages({ chatId: 'c1', messages: [user], trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
    const reader = stream.getReader();
    const before: UIMessageChunk[] = [];
    while (before.filter((chunk) => chunk.type === 'text-delta').length < 3) {
      const next = await reader.read();
      assert.ok(!next.done, JSON.stringify(before));
      before.push(next.value);
    }
    await reader.cancel(); // the page lost its connection mid-answer

    const resumed = await transport.reconnectToStream({ chatId: 'c1' });
    assert.ok(resumed, 'the turn is still running: there is a stream to resume');
    const after = await readAll(resumed);
    const text = [...before, ...after].flatMap((chunk) => (chunk.type === 'text-delta' ? [chunk.delta] : [])).join('');
    assert.equal(text, words.join(' '));
    assert.equal(after.at(-1)?.type, 'finish');
    assert.equal(await transport.reconnectToStream({ chatId: 'c1' }), null, 'an ended turn has nothing to resume');
  });

  it('a stream id from another server gets a clear error chunk and the stream ends', async () => {
    const { fake, server } = harness;
    fake.enqueue({ kind: 'reply', text: 'slow answer here', chunkDelayMs: 100 });
    let foreign = false;
    const transport = agentdChatTransport({
      baseUrl: server.url,
      // the id this chat kept belongs to another server: far beyond this one's newest
      fetch: (input, init) => fetch(input, foreign ? { ...init, headers: { ...(init?.headers as Record<string, string>), 'last-event-id': '999999999' } } : init),
    });
    const user: UIMessage = { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'Go' }] };
    const reader = (await transport.sendMessages({ chatId: 'c2', messages: [user], trigger: 'submit-message', messageId: undefined, abortSignal: undefined })).getReader();
    while ((await reader.read()).value?.type !== 'text-delta');
    await reader.cancel();
    foreign = true;
    const chunks = await readAll((await transport.reconnectToStream({ chatId: 'c2' }))!);
    assert.equal(chunks.at(-1)?.type, 'error');
    assert.match((chunks.at(-1) as { errorText: string }).errorText, /another server/);
  });

  it('refuses a regenerate with an error chunk', async () => {
    const transport = agentdChatTransport({ baseUrl: harness.server.url });
    const chunks = await readAll(await transport.sendMessages({ chatId: 'c3', messages: [], trigger: 'regenerate-message', messageId: 'm', abortSignal: undefined }));
    assert.equal(chunks[0]?.type, 'error');
  });
});

describe('agentd/client/ai-sdk from the published types', () => {
  let project: string;
  before(() => {
    project = mkdtempSync(join(tmpdir(), 'agentd-ai-sdk-types-'));
    mkdirSync(join(project, 'node_modules'));
    // the package as an app installs it (its exports and dist/), beside the app's own `ai`
    symlinkSync(REPOSITORY, join(project, 'node_modules', 'agentd'));
    symlinkSync(join(REPOSITORY, 'node_modules', 'ai'), join(project, 'node_modules', 'ai'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  });
  after(() => rmSync(project, { recursive: true, force: true }));

  function compile(source: string) {
    writeFileSync(join(project, 'app.ts'), source);
    // the `ai` package's own types name Node's (an app that uses it has @types/node)
    const compilerOptions = { module: 'nodenext', target: 'es2022', strict: true, noEmit: true, lib: ['es2022', 'dom'], typeRoots: [join(REPOSITORY, 'node_modules', '@types')], types: ['node'] };
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['app.ts'] }));
    const result = spawnSync(join(REPOSITORY, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8' });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  }

  it('compiles a strict user file that hands the transport to the AI SDK, and refuses a misuse', () => {
    const good = compile([
      "import type { ChatTransport, UIMessage } from 'ai';",
      "import { agentdChatTransport } from 'agentd/client/ai-sdk';",
      "const transport: ChatTransport<UIMessage> = agentdChatTransport({ baseUrl: 'http://127.0.0.1:4096', cwd: 'src' });",
      'export default transport;',
    ].join('\n'));
    assert.equal(good.status, 0, good.output);
    const misuse = compile("import { agentdChatTransport } from 'agentd/client/ai-sdk';\nagentdChatTransport({ baseUrl: 4096 });\n");
    assert.notEqual(misuse.status, 0);
    assert.match(misuse.output, /'number' is not assignable to type 'string'/);
  });
});

describe('the example page (examples/ai-sdk-chat)', () => {
  it('builds with esbuild into one browser module holding React, the AI SDK and the transport', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'agentd-ai-sdk-example-'));
    try {
      const built = spawnSync(process.execPath, [join(REPOSITORY, 'examples/ai-sdk-chat/build.mjs'), outdir], { encoding: 'utf8' });
      assert.equal(built.status, 0, `${built.stdout}${built.stderr}`);
      const bundle = readFileSync(join(outdir, 'app.js'), 'utf8');
      assert.match(bundle, /tool-approval-request/, 'the transport is in the page');
      assert.match(bundle, /addToolApprovalResponse/, "the AI SDK's chat is in the page");
      assert.doesNotMatch(bundle, /from\s*"node:/, 'nothing of Node reaches the browser');
      assert.match(readFileSync(join(REPOSITORY, 'examples/ai-sdk-chat/index.html'), 'utf8'), /src="app\.js"/);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
