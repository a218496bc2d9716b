/**
 * The delta ceiling of the capacity benchmark: the exchanges the contract requires for a live turn
 * and nothing else, in bare node:http, so agentd's cost per delta can be quoted as a ratio of what
 * this machine allows in the same run.
 *
 *   node bench/support/delta-ceiling-server.mjs MODEL_BASE_URL DIALECT
 *
 * POST /v1/sessions answers an id; GET /v1/events?sessionId=… is an SSE stream of that session;
 * POST /v1/sessions/:id/turns asks the model (one streaming request in the dialect's wire format),
 * reads its SSE, takes each text delta out of its frame, gives it the next event id, frames it,
 * keeps it in a replay window (the last 1,000 frames, as agentd's default) and writes it to the
 * session's subscribers; the turn's end is one more frame. No database, no validation, no history.
 */
import { createServer, request as httpRequest } from 'node:http';
import { randomUUID } from 'node:crypto';

const [baseUrl, dialect] = process.argv.slice(2);
const REPLAY_WINDOW = 1000;
const PATHS = { 'openai-responses': '/responses', 'anthropic-messages': '/messages', 'openai-chat': '/chat/completions' };

const subscribersBySession = new Map();
const replay = [];
let nextEventId = 1;

function publish(sessionId, event, data) {
  const id = nextEventId++;
  const frame = `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify({ id, type: event, sessionId, data })}\n\n`;
  replay.push(frame);
  if (replay.length > REPLAY_WINDOW) replay.shift();
  for (const subscriber of subscribersBySession.get(sessionId) ?? []) subscriber.write(frame);
}

/** The text of one provider frame's delta, or null when the frame is not a text delta. */
function textDelta(data) {
  if (data === '[DONE]') return null;
  const parsed = JSON.parse(data);
  if (dialect === 'openai-responses') return parsed.type === 'response.output_text.delta' ? parsed.delta : null;
  if (dialect === 'anthropic-messages') return parsed.type === 'content_block_delta' && parsed.delta?.type === 'text_delta' ? parsed.delta.text : null;
  return parsed.choices?.[0]?.delta?.content || null;
}

function runTurn(sessionId, turnId, input) {
  const body = dialect === 'anthropic-messages'
    ? { model: 'fake-model', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: input }] }
    : dialect === 'openai-chat'
      ? { model: 'fake-model', stream: true, messages: [{ role: 'user', content: input }] }
      : { model: 'fake-model', stream: true, input };
  const request = httpRequest(`${baseUrl}${PATHS[dialect]}`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (response) => {
    response.setEncoding('utf8');
    let buffer = '';
    response.on('data', (chunk) => {
      buffer += chunk;
      let end;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const dataLine = frame.split('\n').find((line) => line.startsWith('data: '));
        const delta = dataLine === undefined ? null : textDelta(dataLine.slice(6));
        if (delta) publish(sessionId, 'response.text.delta', { turnId, delta });
      }
    });
    response.on('end', () => publish(sessionId, 'turn.completed', { turnId }));
  });
  request.on('error', () => publish(sessionId, 'turn.failed', { turnId }));
  request.end(JSON.stringify(body));
}

function readBody(request) {
  return new Promise((resolve) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

function json(response, status, body) {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

const server = createServer(async (request, response) => {
  const url = new URL(request.url, 'http://ceiling');
  const body = await readBody(request);
  if (request.method === 'POST' && url.pathname === '/v1/sessions') return json(response, 201, { id: randomUUID() });
  const turnPath = /^\/v1\/sessions\/([^/]+)\/turns$/.exec(url.pathname);
  if (request.method === 'POST' && turnPath) {
    const turnId = randomUUID();
    json(response, 202, { id: turnId, status: 'queued' });
    return runTurn(turnPath[1], turnId, JSON.parse(body).input);
  }
  if (request.method === 'GET' && url.pathname === '/v1/events') {
    const sessionId = url.searchParams.get('sessionId');
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' });
    response.flushHeaders();
    if (!subscribersBySession.has(sessionId)) subscribersBySession.set(sessionId, new Set());
    subscribersBySession.get(sessionId).add(response);
    response.on('close', () => subscribersBySession.get(sessionId)?.delete(response));
    return;
  }
  json(response, 404, { error: { code: 'not_found' } });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`delta ceiling listening on http://127.0.0.1:${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
