// The ceiling of figure 4: the least a server can do for a turn's exchanges on this machine.
// It answers the three routes bench/turns.ts drives (POST /v1/sessions, POST …/turns, GET /v1/events)
// with bare node:http and better-sqlite3, and does for each turn what agentd's contract requires
// of it, nothing else: the `queued` row committed before the 202 (same pragmas, same tables and
// indexes as agentd's schema), the turn's events in two SSE writes (the POST's, then the answer's),
// one streamed request to the model carrying the session's context, and the turn's end as one
// transaction (history entry, turn, session). No validation, auth, policy, logging or telemetry;
// sessions, their next history index and their context are kept in memory.
//
//   node bench/support/turn-ceiling-server.mjs <model base URL, e.g. http://127.0.0.1:PORT/v1>
//
// Plain JavaScript, run by node itself, as hello-server.mjs is.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const modelUrl = new URL(`${process.argv[2]}/responses`);
const modelAgent = new Agent({ keepAlive: true });
const stateDir = mkdtempSync(join(tmpdir(), 'agentd-turn-ceiling-'));
const db = new Database(join(stateDir, 'ceiling.sqlite'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(`
  create table sessions (id text primary key, boundary_id text not null, created_at text not null, updated_at text not null,
    title text not null, archived integer not null, usage_input integer not null, usage_output integer not null);
  create index sessions_listing on sessions (boundary_id, archived, updated_at, id);
  create table turns (id text primary key, boundary_id text not null, session_id text not null, client_request_id text not null,
    status text not null, created_at text not null, finished_at text, input text not null, output text,
    unique (session_id, client_request_id));
  create index turns_by_boundary on turns (boundary_id, created_at);
  create index turns_by_status on turns (status);
  create table history_turns (session_id text not null, idx integer not null, turn_id text, at text not null,
    user_text text not null, assistant_text text, effect text not null, items text not null, primary key (session_id, idx));
  create index history_turns_context_starts on history_turns (session_id, effect, idx);
`);
const insertSession = db.prepare(`insert into sessions values (?, 'local', ?, ?, '', 0, 0, 0)`);
const insertTurn = db.prepare(`insert into turns values (?, 'local', ?, ?, 'queued', ?, null, ?, null)`);
const insertEntry = db.prepare(`insert into history_turns values (?, ?, ?, ?, ?, ?, 'append', ?)`);
const finishTurn = db.prepare(`update turns set status = 'completed', finished_at = ?, output = ? where id = ?`);
const touchSession = db.prepare(`update sessions set updated_at = ?, usage_input = usage_input + ?, usage_output = usage_output + ? where id = ?`);
const endTurn = db.transaction((session, turn, text, usage, at) => {
  insertEntry.run(session.id, session.nextIndex, turn.id, at, turn.input, text, JSON.stringify(session.context.slice(-2)));
  finishTurn.run(at, JSON.stringify({ text }), turn.id);
  touchSession.run(at, usage.input_tokens ?? 0, usage.output_tokens ?? 0, session.id);
});

// agentd's request body is about this size: 423 characters of instructions and 5,925 of tools.
const INSTRUCTIONS = 'You are a coding agent. '.repeat(18).slice(0, 423);
const TOOLS_JSON = JSON.stringify(
  Array.from({ length: 9 }, (_, index) => ({ type: 'function', name: `tool${index}`, description: 'd'.repeat(520), parameters: { type: 'object', properties: {} } })),
);

const sessions = new Map();
const subscribers = new Set();
let nextEventId = 1;

function frame(type, turn, data) {
  const id = nextEventId++;
  const event = { id, type, turnId: turn.id, sessionId: turn.sessionId, at: new Date().toISOString(), data };
  return `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(event)}\n\n`;
}

function broadcast(frames) {
  for (const response of subscribers) response.write(frames);
}

function sendJson(response, status, value) {
  const body = JSON.stringify(value);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

function readJson(request_) {
  return new Promise((resolve, reject) => {
    let text = '';
    request_.setEncoding('utf8');
    request_.on('data', (chunk) => (text += chunk));
    request_.on('end', () => resolve(text === '' ? {} : JSON.parse(text)));
    request_.on('error', reject);
  });
}

function createSession(response) {
  const at = new Date().toISOString();
  const session = { id: randomUUID(), nextIndex: 0, context: [] };
  insertSession.run(session.id, at, at);
  sessions.set(session.id, session);
  sendJson(response, 201, { id: session.id, createdAt: at, updatedAt: at, title: '' });
}

function submitTurn(session, body, response) {
  const at = new Date().toISOString();
  const turn = { id: randomUUID(), sessionId: session.id, input: String(body.input), status: 'queued', createdAt: at };
  insertTurn.run(turn.id, session.id, turn.id, at, turn.input);
  sendJson(response, 202, turn);
  broadcast(frame('turn.queued', turn, {}) + frame('turn.started', turn, {}));
  askModel(session, turn);
}

function askModel(session, turn) {
  session.context.push({ role: 'user', content: turn.input });
  const input = JSON.stringify(session.context);
  const body = `{"model":"fake-model","input":${input},"stream":true,"store":false,"instructions":${JSON.stringify(INSTRUCTIONS)},"tools":${TOOLS_JSON}}`;
  const modelRequest = request(modelUrl, { method: 'POST', agent: modelAgent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (modelResponse) => {
    let buffered = '';
    const deltas = [];
    let usage = {};
    modelResponse.setEncoding('utf8');
    modelResponse.on('data', (chunk) => {
      buffered += chunk;
      let end;
      while ((end = buffered.indexOf('\n\n')) !== -1) {
        const dataLine = buffered.slice(0, end).split('\n').find((line) => line.startsWith('data: '));
        buffered = buffered.slice(end + 2);
        if (!dataLine) continue;
        const event = JSON.parse(dataLine.slice(6));
        if (event.type === 'response.output_text.delta') deltas.push(event.delta);
        else if (event.type === 'response.completed') usage = event.response.usage ?? {};
      }
    });
    modelResponse.on('end', () => finish(session, turn, deltas, usage));
  });
  modelRequest.end(body);
}

function finish(session, turn, deltas, usage) {
  const text = deltas.join('');
  const at = new Date().toISOString();
  session.context.push({ role: 'assistant', content: text });
  endTurn(session, turn, text, usage, at);
  session.nextIndex += 1;
  let frames = frame('agent.turn.started', turn, {});
  for (const delta of deltas) frames += frame('response.text.delta', turn, { text: delta, truncated: false });
  frames += frame('agent.turn.finished', turn, {}) + frame('turn.completed', turn, { error: null });
  broadcast(frames);
}

const server = createServer((request_, response) => {
  const url = request_.url ?? '';
  if (request_.method === 'GET' && url === '/v1/events') {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    response.flushHeaders();
    subscribers.add(response);
    response.on('close', () => subscribers.delete(response));
    return;
  }
  readJson(request_).then(
    (body) => {
      if (request_.method === 'POST' && url === '/v1/sessions') return createSession(response);
      const match = /^\/v1\/sessions\/([^/]+)\/turns$/.exec(url);
      const session = match && request_.method === 'POST' ? sessions.get(match[1]) : undefined;
      if (session) return submitTurn(session, body, response);
      sendJson(response, 404, { error: { code: 'not_found', message: 'no such route or session' } });
    },
    () => sendJson(response, 400, { error: { code: 'invalid_json', message: 'the body is not JSON' } }),
  );
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => console.log(`turn ceiling listening on http://127.0.0.1:${server.address().port}`));
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => {
    db.close();
    rmSync(stateDir, { recursive: true, force: true });
    process.exit(0);
  });
});
