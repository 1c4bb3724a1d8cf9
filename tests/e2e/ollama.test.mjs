// The ollama dialect through the official `ollama` npm client against a real `hearth serve`:
// generate and chat (streaming and not), greedy output equal to `hearth generate`, ollama's
// default sampling (repeat penalty 1.1) matching the CLI with the same flags, stop strings,
// seeds, logprobs, embeddings on the bert model (equal to `hearth embed`), the model listing
// routes, and errors as ollama.ResponseError with the right status.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import { MODELS, modelPath } from './lib/paths.mjs';
import { startServer } from './lib/server.mjs';
import { hearthEmbed, hearthGenerate } from './lib/cli.mjs';
import { assertCloseVectors } from './lib/checks.mjs';

const stories = modelPath(MODELS.stories);
const bert = modelPath(MODELS.bert);
const PROMPT = 'Once upon a time';
const N = 24;

describe('ollama client: text generation', { skip: !stories && 'stories model missing' }, () => {
  let server;
  let ollama;
  before(async () => {
    server = await startServer({ model: stories, args: ['--parallel', '2'] });
    ollama = new Ollama({ host: server.url });
  });
  after(async () => {
    await server?.stop();
  });

  it('lists, shows, reports the running model and the version', async () => {
    const version = await ollama.version();
    assert.match(version.version, /^\d+\.\d+\.\d+/);
    const tags = await ollama.list();
    assert.equal(tags.models.length, 1);
    const name = tags.models[0].name;
    assert.match(name, /stories260K/i);
    assert.equal(tags.models[0].details.format, 'gguf');
    assert.equal(tags.models[0].details.family, 'llama');
    assert.ok(tags.models[0].size > 1_000_000);
    const show = await ollama.show({ model: name });
    assert.equal(show.details.family, 'llama');
    assert.equal(show.model_info['general.architecture'], 'llama');
    assert.ok(Array.isArray(show.capabilities) && show.capabilities.includes('completion'));
    const ps = await ollama.ps();
    assert.equal(ps.models.length, 1);
    assert.equal(ps.models[0].name, name);
  });

  it('raw greedy generate equals `hearth generate` (non-streaming and streaming)', async () => {
    const ref = await hearthGenerate(stories, PROMPT, { n: N });
    const options = { temperature: 0, num_predict: N, repeat_penalty: 1 };
    const whole = await ollama.generate({ model: server.modelName, prompt: PROMPT, raw: true, stream: false, options });
    assert.equal(whole.response, ref.text);
    assert.equal(whole.done, true);
    assert.equal(whole.done_reason, 'length');
    assert.equal(whole.eval_count, ref.tokens.length);
    assert.equal(whole.prompt_eval_count, ref.prompt_tokens.length);

    let streamed = '';
    let last;
    let chunks = 0;
    for await (const part of await ollama.generate({ model: server.modelName, prompt: PROMPT, raw: true, stream: true, options })) {
      streamed += part.response;
      last = part;
      chunks += 1;
    }
    assert.equal(streamed, ref.text);
    assert.ok(chunks > 2, `expected several chunks, got ${chunks}`);
    assert.equal(last.done, true);
    assert.equal(last.eval_count, N);
  });

  it("ollama's default repeat penalty matches the CLI with the same flags", async () => {
    const ref = await hearthGenerate(stories, PROMPT, { n: 48, args: ['--repeat-penalty', '1.1', '--repeat-last-n', '64'] });
    const plain = await hearthGenerate(stories, PROMPT, { n: 48 });
    const r = await ollama.generate({ model: server.modelName, prompt: PROMPT, raw: true, stream: false, options: { temperature: 0, num_predict: 48 } });
    assert.equal(r.response, ref.text);
    // The penalty must really be in effect (otherwise this test proves nothing).
    assert.notEqual(ref.text, plain.text);
  });

  it('chat streams the same text it returns whole', async () => {
    const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
    const options = { temperature: 0, num_predict: N };
    const whole = await ollama.chat({ model: server.modelName, messages, stream: false, options });
    assert.equal(whole.message.role, 'assistant');
    assert.ok(whole.message.content.length > 0);
    assert.equal(whole.done, true);
    assert.ok(['length', 'stop'].includes(whole.done_reason));
    let streamed = '';
    let last;
    for await (const part of await ollama.chat({ model: server.modelName, messages, stream: true, options })) {
      streamed += part.message.content;
      last = part;
    }
    assert.equal(streamed, whole.message.content);
    assert.equal(last.done, true);
    assert.equal(last.eval_count, whole.eval_count);
    assert.equal(last.prompt_eval_count, whole.prompt_eval_count);
  });

  it('stop strings end the text before the stop string', async () => {
    const ref = await hearthGenerate(stories, PROMPT, { n: N });
    const stop = 'little';
    const cut = ref.text.indexOf(stop);
    assert.ok(cut > 0, 'the reference text must contain the stop string');
    for (const stream of [false, true]) {
      const options = { temperature: 0, num_predict: N, repeat_penalty: 1, stop: [stop] };
      let text = '';
      let last;
      if (stream) {
        for await (const p of await ollama.generate({ model: server.modelName, prompt: PROMPT, raw: true, stream, options })) {
          text += p.response;
          last = p;
        }
      } else {
        last = await ollama.generate({ model: server.modelName, prompt: PROMPT, raw: true, stream, options });
        text = last.response;
      }
      assert.equal(text, ref.text.slice(0, cut), `stream=${stream}`);
      assert.equal(last.done_reason, 'stop');
    }
  });

  it('the same seed gives the same sampled text; other seeds differ', async () => {
    const gen = (seed) =>
      ollama.generate({ model: server.modelName, prompt: PROMPT, raw: true, stream: false, options: { temperature: 1.5, seed, num_predict: 32 } });
    const a = await gen(42);
    const b = await gen(42);
    assert.equal(a.response, b.response);
    const others = await Promise.all([gen(1), gen(2), gen(3)]);
    assert.ok(others.some((o) => o.response !== a.response), 'three other seeds all gave the seed-42 text');
  });

  it('logprobs: one entry per token, the greedy token is the top alternative', async () => {
    const r = await ollama.generate({
      model: server.modelName,
      prompt: PROMPT,
      raw: true,
      stream: false,
      logprobs: true,
      top_logprobs: 3,
      options: { temperature: 0, num_predict: 8, repeat_penalty: 1 },
    });
    assert.ok(Array.isArray(r.logprobs), 'logprobs missing');
    assert.equal(r.logprobs.length, 8);
    assert.equal(r.logprobs.map((l) => l.token).join(''), r.response);
    for (const l of r.logprobs) {
      assert.ok(l.logprob <= 0);
      assert.equal(l.top_logprobs.length, 3);
      assert.equal(l.top_logprobs[0].token, l.token);
      assert.ok(Math.abs(l.top_logprobs[0].logprob - l.logprob) < 1e-4);
      for (let i = 1; i < 3; i++) assert.ok(l.top_logprobs[i].logprob <= l.top_logprobs[i - 1].logprob);
    }
  });

  it('errors come back as ResponseError with the status', async () => {
    await assert.rejects(
      ollama.generate({ model: 'no-such-model', prompt: 'x', stream: false }),
      (e) => e.name === 'ResponseError' && e.status_code === 404 && /not found/i.test(e.error),
    );
    await assert.rejects(
      ollama.chat({ model: server.modelName, messages: [{ role: 'wizard', content: 'x' }], stream: false }),
      (e) => e.name === 'ResponseError' && e.status_code === 400 && /role/.test(e.error),
    );
    await assert.rejects(
      ollama.generate({ model: server.modelName, prompt: 'x', stream: false, options: { top_p: 7 } }),
      (e) => e.name === 'ResponseError' && e.status_code === 400 && /top_p/.test(e.error),
    );
    await assert.rejects(
      ollama.generate({ model: server.modelName, prompt: 'x', stream: false, images: ['aGVsbG8='] }),
      (e) => e.name === 'ResponseError' && e.status_code === 400 && /image/.test(e.error),
    );
    // A streaming request that fails up front gets the error status too, not a 200 stream.
    await assert.rejects(
      (async () => {
        for await (const part of await ollama.generate({ model: server.modelName, prompt: 'x', stream: true, options: { top_p: 7 } })) {
          void part;
        }
      })(),
      (e) => e.name === 'ResponseError' && e.status_code === 400,
    );
    server.checkHealthy();
  });
});

describe('ollama client: embeddings', { skip: !bert && 'bert model missing' }, () => {
  let server;
  let ollama;
  before(async () => {
    server = await startServer({ model: bert });
    ollama = new Ollama({ host: server.url });
  });
  after(async () => {
    await server?.stop();
  });

  it('embed equals `hearth embed`, one normalised vector per input', async () => {
    const texts = ['hello world', 'the quick brown fox jumps over the lazy dog'];
    const ref = await hearthEmbed(bert, texts);
    const r = await ollama.embed({ model: server.modelName, input: texts });
    assert.equal(r.embeddings.length, 2);
    for (let i = 0; i < 2; i++) {
      assertCloseVectors(r.embeddings[i], ref[i], 1e-5);
      const norm = Math.hypot(...r.embeddings[i]);
      assert.ok(Math.abs(norm - 1) < 1e-4, `norm ${norm}`);
    }
    assert.ok(r.prompt_eval_count > 0);
    const single = await ollama.embed({ model: server.modelName, input: texts[0] });
    assertCloseVectors(single.embeddings[0], ref[0], 1e-5);
  });

  it('the legacy /api/embeddings route gives the same vector, unnormalised as ollama does', async () => {
    const ref = await hearthEmbed(bert, ['hello world']);
    const r = await ollama.embeddings({ model: server.modelName, prompt: 'hello world' });
    const norm = Math.hypot(...r.embedding);
    assert.ok(Math.abs(norm - 1) > 1e-3, `legacy embedding has norm ${norm}; ollama's legacy route does not normalise`);
    assertCloseVectors(r.embedding.map((x) => x / norm), ref[0], 1e-5);
  });

  it('an embedding model refuses generation with a 4xx', async () => {
    await assert.rejects(
      ollama.generate({ model: server.modelName, prompt: 'x', stream: false }),
      (e) => e.name === 'ResponseError' && e.status_code >= 400 && e.status_code < 500,
    );
    server.checkHealthy();
  });
});
