// A table of malformed requests across every route: each row is (server, method, path, headers,
// body, expected status, expected error shape). Every request must get its documented 4xx with
// the error body of the route's dialect (ollama {error}, OpenAI {error:{message,type,code}},
// Anthropic {type:"error",error:{type,message}}), and the server must stay healthy after each
// one (GET /health 200, no sanitizer report, and a real request still answered at the end).
// Three servers: the stories model, the bert model (embedding routes) and the stories model
// with an API key and an origin allowlist (auth and CORS rows).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { MODELS, modelPath } from './lib/paths.mjs';
import { startServer } from './lib/server.mjs';
import { assertErrorShape } from './lib/checks.mjs';

const stories = modelPath(MODELS.stories);
const bert = modelPath(MODELS.bert);
const KEY = 'sk-hearth-e2e-key';
const ALLOWED_ORIGIN = 'https://allowed.example';

// A request with full control over method, headers and raw body (fetch would refuse some).
function rawRequest(server, { method, path, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const h = { ...headers };
    if (payload !== undefined) {
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json';
      h['Content-Length'] = payload.length;
    }
    const req = http.request({ host: '127.0.0.1', port: server.port, method, path, headers: h, agent: false }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', (e) => {
      // A server may answer 413 and close before reading the whole body.
      if (e.code === 'EPIPE' || e.code === 'ECONNRESET') resolve({ status: 'reset', headers: {}, text: '' });
      else reject(e);
    });
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

const user = [{ role: 'user', content: 'hi' }];
const M = '@model'; // replaced by the server's model name

// [name, server, method, path, body, status, dialect, headers]
const ROWS = [
  // ---- ollama /api/generate
  ['generate: truncated JSON', 's', 'POST', '/api/generate', '{"model": "x", "prompt": ', 400, 'ollama'],
  ['generate: body is an array', 's', 'POST', '/api/generate', '[]', 400, 'ollama'],
  ['generate: empty body', 's', 'POST', '/api/generate', '', 400, 'ollama'],
  ['generate: model missing', 's', 'POST', '/api/generate', { prompt: 'hi' }, 400, 'ollama'],
  ['generate: unknown model', 's', 'POST', '/api/generate', { model: 'no-such-model', prompt: 'hi' }, 404, 'ollama'],
  ['generate: prompt is a number', 's', 'POST', '/api/generate', { model: M, prompt: 42 }, 400, 'ollama'],
  ['generate: options is a string', 's', 'POST', '/api/generate', { model: M, prompt: 'hi', options: 'fast' }, 400, 'ollama'],
  ['generate: temperature is a string', 's', 'POST', '/api/generate', { model: M, prompt: 'hi', options: { temperature: 'hot' } }, 400, 'ollama'],
  ['generate: top_p above 1', 's', 'POST', '/api/generate', { model: M, prompt: 'hi', options: { top_p: 7 } }, 400, 'ollama'],
  ['generate: num_predict is a string', 's', 'POST', '/api/generate', { model: M, prompt: 'hi', options: { num_predict: 'ten' } }, 400, 'ollama'],
  ['generate: stream is a string', 's', 'POST', '/api/generate', { model: M, prompt: 'hi', stream: 'yes' }, 400, 'ollama'],
  ['generate: images on a text model', 's', 'POST', '/api/generate', { model: M, prompt: 'hi', images: ['aGVsbG8='] }, 400, 'ollama'],
  ['generate: top_logprobs too large', 's', 'POST', '/api/generate', { model: M, prompt: 'hi', logprobs: true, top_logprobs: 1000 }, 400, 'ollama'],
  // ---- ollama /api/chat
  ['chat: messages is an object', 's', 'POST', '/api/chat', { model: M, messages: { role: 'user' } }, 400, 'ollama'],
  ['chat: unknown role', 's', 'POST', '/api/chat', { model: M, messages: [{ role: 'wizard', content: 'x' }] }, 400, 'ollama'],
  ['chat: message is a string', 's', 'POST', '/api/chat', { model: M, messages: ['hello'] }, 400, 'ollama'],
  ['chat: content is a number', 's', 'POST', '/api/chat', { model: M, messages: [{ role: 'user', content: 7 }] }, 400, 'ollama'],
  ['chat: unknown model', 's', 'POST', '/api/chat', { model: 'missing:latest', messages: user }, 404, 'ollama'],
  // ---- ollama embeddings (bert)
  ['embed: input is an object', 'b', 'POST', '/api/embed', { model: M, input: { text: 'x' } }, 400, 'ollama'],
  ['embed: input is a number', 'b', 'POST', '/api/embed', { model: M, input: 5 }, 400, 'ollama'],
  ['embed: input array holds a number', 'b', 'POST', '/api/embed', { model: M, input: ['a', 1] }, 400, 'ollama'],
  ['embeddings: prompt is an object', 'b', 'POST', '/api/embeddings', { model: M, prompt: { text: 'x' } }, 400, 'ollama'],
  ['embed: unknown model', 'b', 'POST', '/api/embed', { model: 'nope', input: 'x' }, 404, 'ollama'],
  // ---- ollama listing routes
  ['show: model missing', 's', 'POST', '/api/show', {}, 400, 'ollama'],
  ['show: unknown model', 's', 'POST', '/api/show', { model: 'no-such-model' }, 404, 'ollama'],
  ['version: wrong method', 's', 'POST', '/api/version', {}, 405, 'ollama'],
  ['tags: wrong method', 's', 'DELETE', '/api/tags', undefined, 405, 'ollama'],
  ['ps: wrong method', 's', 'POST', '/api/ps', {}, 405, 'ollama'],
  ['generate: wrong method', 's', 'GET', '/api/generate', undefined, 405, 'ollama'],
  ['ollama: unknown route', 's', 'GET', '/api/pull-everything', undefined, 404, 'ollama'],
  // ---- OpenAI /v1/chat/completions
  ['chat.completions: truncated JSON', 's', 'POST', '/v1/chat/completions', '{"messages": [', 400, 'openai'],
  ['chat.completions: messages missing', 's', 'POST', '/v1/chat/completions', { max_tokens: 4 }, 400, 'openai'],
  ['chat.completions: messages empty', 's', 'POST', '/v1/chat/completions', { messages: [] }, 400, 'openai'],
  ['chat.completions: unknown role', 's', 'POST', '/v1/chat/completions', { messages: [{ role: 'robot', content: 'x' }] }, 400, 'openai'],
  ['chat.completions: temperature is a string', 's', 'POST', '/v1/chat/completions', { messages: user, temperature: 'warm' }, 400, 'openai'],
  ['chat.completions: negative max_tokens', 's', 'POST', '/v1/chat/completions', { messages: user, max_tokens: -5 }, 400, 'openai'],
  ['chat.completions: n = 0', 's', 'POST', '/v1/chat/completions', { messages: user, n: 0 }, 400, 'openai'],
  ['chat.completions: top_logprobs 50', 's', 'POST', '/v1/chat/completions', { messages: user, logprobs: true, top_logprobs: 50 }, 400, 'openai'],
  ['chat.completions: stop is a number', 's', 'POST', '/v1/chat/completions', { messages: user, stop: 3 }, 400, 'openai'],
  ['chat.completions: logit_bias is a list', 's', 'POST', '/v1/chat/completions', { messages: user, logit_bias: [1, 2] }, 400, 'openai'],
  ['chat.completions: tools is an object', 's', 'POST', '/v1/chat/completions', { messages: user, tools: { name: 'f' } }, 400, 'openai'],
  ['chat.completions: wrong method', 's', 'GET', '/v1/chat/completions', undefined, 405, 'openai'],
  ['chat.completions: bad X-Conversation-Id', 's', 'POST', '/v1/chat/completions', { messages: user, max_tokens: 2 }, 400, 'openai', { 'X-Conversation-Id': 'has spaces/and slashes' }],
  ['chat.completions: X-Conversation-Id too long', 's', 'POST', '/v1/chat/completions', { messages: user, max_tokens: 2 }, 400, 'openai', { 'X-Conversation-Id': 'x'.repeat(200) }],
  // ---- OpenAI /v1/completions
  ['completions: prompt missing', 's', 'POST', '/v1/completions', { max_tokens: 4 }, 400, 'openai'],
  ['completions: prompt is an object', 's', 'POST', '/v1/completions', { prompt: { text: 'x' } }, 400, 'openai'],
  ['completions: prompt array of arrays of strings', 's', 'POST', '/v1/completions', { prompt: [['a', 'b']] }, 400, 'openai'],
  ['completions: prompt token ids out of vocabulary', 's', 'POST', '/v1/completions', { prompt: [1, 99999999] }, 400, 'openai'],
  ['completions: logprobs 1000', 's', 'POST', '/v1/completions', { prompt: 'x', logprobs: 1000 }, 400, 'openai'],
  ['completions: top_p 2', 's', 'POST', '/v1/completions', { prompt: 'x', top_p: 2 }, 400, 'openai'],
  // ---- OpenAI /v1/embeddings (bert)
  ['embeddings: input missing', 'b', 'POST', '/v1/embeddings', { model: 'x' }, 400, 'openai'],
  ['embeddings: empty input list', 'b', 'POST', '/v1/embeddings', { input: [] }, 400, 'openai'],
  ['embeddings: encoding_format hex', 'b', 'POST', '/v1/embeddings', { input: 'x', encoding_format: 'hex' }, 400, 'openai'],
  ['embeddings: input of objects', 'b', 'POST', '/v1/embeddings', { input: [{ text: 'x' }] }, 400, 'openai'],
  // ---- OpenAI /v1/responses and /v1/models
  ['responses: input missing', 's', 'POST', '/v1/responses', { max_output_tokens: 4 }, 400, 'openai'],
  ['responses: input is a number', 's', 'POST', '/v1/responses', { input: 12 }, 400, 'openai'],
  ['responses: negative max_output_tokens', 's', 'POST', '/v1/responses', { input: 'x', max_output_tokens: -1 }, 400, 'openai'],
  ['models: wrong method', 's', 'POST', '/v1/models', {}, 405, 'openai'],
  ['openai: unknown route', 's', 'GET', '/v1/engines', undefined, 404, 'openai'],
  // ---- Anthropic /v1/messages
  ['messages: truncated JSON', 's', 'POST', '/v1/messages', '{"max_tokens": 4, "messages": [{', 400, 'anthropic'],
  ['messages: max_tokens missing', 's', 'POST', '/v1/messages', { messages: user }, 400, 'anthropic'],
  ['messages: messages missing', 's', 'POST', '/v1/messages', { max_tokens: 4 }, 400, 'anthropic'],
  ['messages: system role inside messages', 's', 'POST', '/v1/messages', { max_tokens: 4, messages: [{ role: 'system', content: 'x' }] }, 400, 'anthropic'],
  ['messages: unknown content block', 's', 'POST', '/v1/messages', { max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'hologram' }] }] }, 400, 'anthropic'],
  ['messages: max_tokens 0', 's', 'POST', '/v1/messages', { max_tokens: 0, messages: user }, 400, 'anthropic'],
  ['messages: stop_sequences is a string', 's', 'POST', '/v1/messages', { max_tokens: 4, messages: user, stop_sequences: 'END' }, 400, 'anthropic'],
  ['messages: wrong method', 's', 'GET', '/v1/messages', undefined, 405, 'anthropic'],
  ['count_tokens: messages missing', 's', 'POST', '/v1/messages/count_tokens', {}, 400, 'anthropic'],
  ['count_tokens: wrong method', 's', 'GET', '/v1/messages/count_tokens', undefined, 405, 'anthropic'],
  ['anthropic: unknown route', 's', 'POST', '/v1/messages/batches-of-everything', {}, 404, 'anthropic'],
  // ---- extras
  ['tokenize: content missing', 's', 'POST', '/tokenize', {}, 400, 'openai'],
  ['tokenize: content is a number', 's', 'POST', '/tokenize', { content: 1 }, 400, 'openai'],
  ['detokenize: negative id', 's', 'POST', '/detokenize', { tokens: [-1] }, 400, 'openai'],
  ['detokenize: id past the vocabulary', 's', 'POST', '/detokenize', { tokens: [1 << 30] }, 400, 'openai'],
  ['detokenize: tokens is a string', 's', 'POST', '/detokenize', { tokens: 'abc' }, 400, 'openai'],
  ['apply-template: messages missing', 's', 'POST', '/apply-template', {}, 400, 'openai'],
  ['health: wrong method', 's', 'POST', '/health', {}, 405, 'openai'],
  ['metrics: wrong method', 's', 'POST', '/metrics', {}, 405, 'openai'],
  ['props: wrong method', 's', 'DELETE', '/props', undefined, 405, 'openai'],
  ['slots: wrong method', 's', 'POST', '/slots', {}, 405, 'openai'],
  // ---- resumable streams
  ['stream: from is not a number', 's', 'GET', '/v1/stream/abc?from=xyz', undefined, 400, 'openai'],
  ['stream: negative from', 's', 'GET', '/v1/stream/abc?from=-1', undefined, 400, 'openai'],
  ['stream: unknown id', 's', 'GET', '/v1/stream/never-started', undefined, 404, 'openai'],
  ['stream: delete unknown id', 's', 'DELETE', '/v1/stream/never-started', undefined, 404, 'openai'],
  ['streams/lookup: ids missing', 's', 'POST', '/v1/streams/lookup', {}, 400, 'openai'],
  ['streams/lookup: ids are numbers', 's', 'POST', '/v1/streams/lookup', { conversation_ids: [1, 2] }, 400, 'openai'],
  // ---- body limit (default 32 MiB)
  ['chat.completions: body over the limit', 's', 'POST', '/v1/chat/completions', () => Buffer.alloc(33 << 20, 0x20), 413, 'openai'],
  // ---- API key (server started with --api-key)
  ['auth: no key, OpenAI route', 'k', 'POST', '/v1/chat/completions', { messages: user }, 401, 'openai', {}],
  ['auth: wrong Bearer key, ollama route', 'k', 'POST', '/api/chat', { model: M, messages: user }, 401, 'ollama', { Authorization: 'Bearer wrong' }],
  ['auth: wrong x-api-key, Anthropic route', 'k', 'POST', '/v1/messages', { max_tokens: 4, messages: user }, 401, 'anthropic', { 'x-api-key': 'wrong' }],
  ['auth: no key, metrics', 'k', 'GET', '/metrics', undefined, 401, 'openai', {}],
  ['auth: key in the wrong scheme', 'k', 'GET', '/v1/models', undefined, 401, 'openai', { Authorization: `Basic ${KEY}` }],
  // ---- CORS allowlist
  ['cors: origin not allowed', 'k', 'POST', '/v1/chat/completions', { messages: user }, 403, 'openai', { Origin: 'https://evil.example', Authorization: `Bearer ${KEY}` }],
  ['cors: origin not allowed, ollama', 'k', 'GET', '/api/tags', undefined, 403, 'ollama', { Origin: 'http://attacker.test', Authorization: `Bearer ${KEY}` }],
];

describe('malformed requests', { skip: (!stories || !bert) && 'test models missing' }, () => {
  const servers = {};
  before(async () => {
    [servers.s, servers.b, servers.k] = await Promise.all([
      startServer({ model: stories }),
      startServer({ model: bert }),
      startServer({ model: stories, apiKey: KEY, env: { HEARTH_ORIGINS: ALLOWED_ORIGIN } }),
    ]);
  });
  after(async () => {
    await Promise.all(Object.values(servers).map((s) => s?.stop()));
  });

  it(`has at least 50 rows covering every route (${ROWS.length} rows)`, () => {
    assert.ok(ROWS.length >= 50);
    const routes = new Set(ROWS.map((r) => r[3].replace(/\?.*/, '').replace(/\/v1\/stream\/.*/, '/v1/stream/{id}')));
    for (const r of ['/api/generate', '/api/chat', '/api/embed', '/api/embeddings', '/api/version', '/api/tags', '/api/show', '/api/ps',
      '/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses', '/v1/models', '/v1/messages',
      '/v1/messages/count_tokens', '/health', '/metrics', '/tokenize', '/detokenize', '/apply-template', '/props', '/slots',
      '/v1/stream/{id}', '/v1/streams/lookup']) {
      assert.ok(routes.has(r), `no row for ${r}`);
    }
  });

  for (const [name, which, method, path, body, status, dialect, headers] of ROWS) {
    it(`${method} ${path.length > 40 ? path.slice(0, 40) + '…' : path} — ${name} → ${status}`, async () => {
      const server = servers[which];
      let payload = typeof body === 'function' ? body() : body;
      if (payload && typeof payload === 'object' && !Buffer.isBuffer(payload)) {
        payload = JSON.parse(JSON.stringify(payload).replaceAll(`"${M}"`, JSON.stringify(server.modelName)));
      }
      const h = headers ?? server.authHeaders();
      const r = await rawRequest(server, { method, path, headers: h, body: payload });
      if (status === 413 && r.status === 'reset') {
        // The server refused the body before reading it; acceptable only with no crash.
      } else {
        assert.equal(r.status, status, `${name}: got ${r.status} ${r.text.slice(0, 300)}`);
        let json;
        try {
          json = JSON.parse(r.text);
        } catch {
          assert.fail(`${name}: error body is not JSON: ${r.text.slice(0, 200)}`);
        }
        assert.match(r.headers['content-type'] || '', /application\/json/);
        assertErrorShape(dialect, json, status, name);
      }
      const health = await rawRequest(server, { method: 'GET', path: '/health' });
      assert.equal(health.status, 200, `unhealthy after '${name}'`);
      server.checkHealthy();
    });
  }

  it('the servers still answer real requests afterwards', async () => {
    const s = servers.s;
    const r = await s.postJson('/v1/completions', { prompt: 'Once upon a time', max_tokens: 4, temperature: 0 });
    assert.equal(r.usage.completion_tokens, 4);
    const e = await servers.b.postJson('/v1/embeddings', { input: 'ok' });
    assert.equal(e.data.length, 1);
  });

  it('the keyed server takes the key as Bearer or x-api-key, leaves /health open, and answers allowed origins', async () => {
    const k = servers.k;
    const bearer = await rawRequest(k, { method: 'GET', path: '/v1/models', headers: { Authorization: `Bearer ${KEY}` } });
    assert.equal(bearer.status, 200);
    const xkey = await rawRequest(k, { method: 'POST', path: '/v1/messages', headers: { 'x-api-key': KEY }, body: { max_tokens: 2, messages: user } });
    assert.equal(xkey.status, 200, xkey.text);
    const health = await rawRequest(k, { method: 'GET', path: '/health' });
    assert.equal(health.status, 200);
    const cors = await rawRequest(k, { method: 'GET', path: '/v1/models', headers: { Authorization: `Bearer ${KEY}`, Origin: ALLOWED_ORIGIN } });
    assert.equal(cors.status, 200);
    assert.equal(cors.headers['access-control-allow-origin'], ALLOWED_ORIGIN);
    // Preflight: no key needed, the allowed origin echoed.
    const pre = await rawRequest(k, {
      method: 'OPTIONS',
      path: '/v1/chat/completions',
      headers: { Origin: ALLOWED_ORIGIN, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type' },
    });
    assert.ok(pre.status === 204 || pre.status === 200, `preflight ${pre.status}`);
    assert.equal(pre.headers['access-control-allow-origin'], ALLOWED_ORIGIN);
    // Loopback origins (a local web UI) are allowed by default.
    const local = await rawRequest(k, { method: 'GET', path: '/v1/models', headers: { Authorization: `Bearer ${KEY}`, Origin: `http://127.0.0.1:${k.port}` } });
    assert.equal(local.status, 200);
  });
});
