// Disconnects and resumable streams: a plain stream whose client closes its socket is cancelled
// promptly (the slot frees, the engine counts a cancellation, the other streams go on
// unchanged); a stream sent with X-Conversation-Id keeps generating without its client, and a
// client reattaching with GET /v1/stream/{id}?from=N receives the rest, byte-identical to the
// full stream; POST /v1/streams/lookup and DELETE /v1/stream/{id} report and stop streams.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MODELS, modelPath } from './lib/paths.mjs';
import { metricValues, sleep, startServer } from './lib/server.mjs';
import { openStream, openaiStreamText, parseNDJSON, sseJson, tokenArrivals } from './lib/stream.mjs';

const stories = modelPath(MODELS.stories);

async function waitUntil(what, pred, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs * Number(process.env.HEARTH_E2E_TIMEOUT_SCALE || 1);
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

async function lookup(server, id) {
  const r = await server.postJson('/v1/streams/lookup', { conversation_ids: [id] });
  assert.equal(r.streams.length, 1);
  assert.equal(r.streams[0].conversation_id, id);
  return r.streams[0];
}

async function fetchBytes(server, path) {
  const res = await server.fetch(path);
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe('disconnects and resumable streams', { skip: !stories && 'stories model missing' }, () => {
  let server;
  before(async () => {
    server = await startServer({ model: stories, args: ['--parallel', '2', '--ctx-size', '4096'] });
  });
  after(async () => {
    await server?.stop();
  });

  it('a plain stream is cancelled when its client goes away; the other stream is untouched', async () => {
    const maxTokens = 1800;
    const body = { prompt: 'Once upon a time', max_tokens: maxTokens, temperature: 0, stream: true, ignore_eos: true };
    // The survivor's reference output, alone.
    const survivorBody = { prompt: 'The little dog', max_tokens: 64, temperature: 0, stream: true };
    const ref = openStream(server, '/v1/completions', { body: survivorBody });
    await ref.done;
    const refText = openaiStreamText(ref.text());

    const m0 = await metricValues(server);
    const victim = openStream(server, '/v1/completions', { body });
    await victim.waitFor((h) => tokenArrivals(h).length >= 5);
    const survivor = openStream(server, '/v1/completions', { body: survivorBody });
    victim.close();
    const closedAt = performance.now();

    const freed = await waitUntil('the cancelled request to leave its slot', async () => {
      const m = await metricValues(server);
      return m.hearth_requests_cancelled_total > m0.hearth_requests_cancelled_total ? m : null;
    });
    const freeMs = performance.now() - closedAt;
    await survivor.done;
    const m1 = await metricValues(server);
    assert.equal(openaiStreamText(survivor.text()), refText, 'the surviving stream changed');
    assert.equal(freed.hearth_requests_cancelled_total - m0.hearth_requests_cancelled_total, 1);
    assert.equal(m1.hearth_stream_disconnects_total - m0.hearth_stream_disconnects_total, 1);
    // Far fewer tokens than asked for were generated for the closed stream.
    const generated = m1.hearth_generated_tokens_total - m0.hearth_generated_tokens_total - 64;
    assert.ok(generated < maxTokens / 2, `the closed stream kept generating (${generated} tokens)`);
    assert.ok(freeMs < 5000 * Number(process.env.HEARTH_E2E_TIMEOUT_SCALE || 1), `slot freed only after ${freeMs.toFixed(0)} ms`);
    const slots = await server.getJson('/slots');
    assert.equal(slots.filter((s) => s.is_processing).length, 0, JSON.stringify(slots));
    console.log(`# closed stream: cancelled ${freeMs.toFixed(0)} ms after the socket closed, ${generated} tokens generated`);
    server.checkHealthy();
  });

  it('a non-streaming request whose client leaves is cancelled too', async () => {
    const m0 = await metricValues(server);
    const h = openStream(server, '/v1/completions', {
      body: { prompt: 'Once upon a time', max_tokens: 1800, temperature: 0, stream: false, ignore_eos: true },
    });
    await waitUntil('the request to start', async () => (await server.getJson('/slots')).some((s) => s.is_processing));
    h.close();
    await waitUntil('the request to be cancelled', async () => {
      const m = await metricValues(server);
      return m.hearth_requests_cancelled_total > m0.hearth_requests_cancelled_total;
    });
    server.checkHealthy();
  });

  it('a stream with X-Conversation-Id completes without its client; reattaching gives the byte-identical stream', async () => {
    const id = `conv-${randomUUID()}`;
    const maxTokens = 600;
    const body = { messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: maxTokens, temperature: 0, stream: true, ignore_eos: true };
    const m0 = await metricValues(server);
    const first = openStream(server, '/v1/chat/completions', { body, headers: { 'X-Conversation-Id': id } });
    await first.waitFor((h) => tokenArrivals(h).length >= 5);
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-conversation-id'], id);
    const seen = first.bytes();
    first.close();

    // Reattach at once from where the first client stopped (normally while it still runs, so the
    // reattached client follows it live).
    const stateAtReattach = (await lookup(server, id)).status;
    const rest = openStream(server, `/v1/stream/${id}?from=${seen.length}`, { method: 'GET' });
    await rest.done;
    assert.equal(rest.status, 200);
    assert.equal(rest.headers['x-stream-offset'], String(seen.length));

    const status = await waitUntil('the stream to finish', async () => {
      const s = await lookup(server, id);
      return s.status === 'running' ? null : s;
    });
    assert.equal(status.status, 'done');

    const full = await fetchBytes(server, `/v1/stream/${id}?from=0`);
    assert.equal(full.status, 200);
    assert.equal(status.bytes, full.bytes.length);
    assert.ok(full.bytes.subarray(0, seen.length).equals(seen), 'the first client saw bytes that differ from the replay');
    assert.ok(full.bytes.subarray(seen.length).equals(rest.bytes()), 'the reattached client got different bytes');
    const text = full.bytes.toString('utf8');
    assert.ok(text.trimEnd().endsWith('data: [DONE]'), 'the replayed stream is not complete');

    // The conversation ran to the end: every token generated, nothing cancelled.
    const m1 = await metricValues(server);
    assert.equal(m1.hearth_requests_cancelled_total, m0.hearth_requests_cancelled_total);
    const chunks = sseJson(text);
    const usageTokens = chunks.filter((c) => c.usage).at(-1)?.usage?.completion_tokens;
    if (usageTokens !== undefined) assert.equal(usageTokens, maxTokens);
    assert.ok(m1.hearth_generated_tokens_total - m0.hearth_generated_tokens_total >= maxTokens);
    console.log(`# resumable stream: first client took ${seen.length} of ${full.bytes.length} bytes; stream was ${stateAtReattach} at reattach`);

    // And its text is what the same request gives without a conversation id.
    const plain = openStream(server, '/v1/chat/completions', { body });
    await plain.done;
    assert.equal(openaiStreamText(text), openaiStreamText(plain.text()));

    // A later offset replays the tail; an offset past the end gives nothing more.
    const tail = await fetchBytes(server, `/v1/stream/${id}?from=${full.bytes.length - 10}`);
    assert.ok(tail.bytes.equals(full.bytes.subarray(full.bytes.length - 10)));
    server.checkHealthy();
  });

  it('resumable ollama chat (NDJSON) replays byte-identically', async () => {
    const id = `ollama.${randomUUID()}`;
    const body = { model: server.modelName, messages: [{ role: 'user', content: 'Hi' }], stream: true, options: { temperature: 0, num_predict: 40 } };
    const first = openStream(server, '/api/chat', { body, headers: { 'X-Conversation-Id': id } });
    await first.done;
    assert.equal(first.status, 200);
    const lines = parseNDJSON(first.text());
    assert.equal(lines.at(-1).done, true);
    const replay = await fetchBytes(server, `/v1/stream/${id}?from=0`);
    assert.ok(replay.bytes.equals(first.bytes()));
  });

  it('DELETE stops a running conversation; lookup reports it; unknown ids are not found', async () => {
    const id = `conv-${randomUUID()}`;
    const body = { messages: [{ role: 'user', content: 'Go on.' }], max_tokens: 1800, temperature: 0, stream: true, ignore_eos: true };
    const first = openStream(server, '/v1/chat/completions', { body, headers: { 'X-Conversation-Id': id } });
    await first.waitFor((h) => tokenArrivals(h).length >= 3);
    // The same id cannot start a second stream while the first runs.
    const dup = await server.request('POST', '/v1/chat/completions', body, { 'X-Conversation-Id': id });
    assert.equal(dup.status, 409, dup.text);
    assert.equal((await lookup(server, id)).status, 'running');

    const del = await server.request('DELETE', `/v1/stream/${id}`);
    assert.equal(del.status, 200, del.text);
    assert.equal(del.json.status, 'cancelled');
    await first.done;
    assert.equal((await lookup(server, id)).status, 'cancelled');
    await waitUntil('the slot to be free', async () => !(await server.getJson('/slots')).some((s) => s.is_processing));

    const r = await server.postJson('/v1/streams/lookup', { conversation_ids: ['never-seen', id] });
    assert.deepEqual(r.streams.map((s) => s.status), ['not_found', 'cancelled']);
    const missing = await server.request('GET', '/v1/stream/never-seen');
    assert.equal(missing.status, 404);
    const missingDelete = await server.request('DELETE', '/v1/stream/never-seen');
    assert.equal(missingDelete.status, 404);
    server.checkHealthy();
  });
});
