// Structured output through the official clients against a real `hearth serve`: ollama's
// `format` (a JSON schema, and "json") and OpenAI's `response_format` (json_schema and
// json_object) and llama-server's `grammar`. The tiny stories model writes nonsense, but under
// the grammar the output must be JSON that validates against the schema. The schema is small and
// bounded (enums, booleans, a short string, an integer) so generation finishes well inside
// num_predict and the grammar, not the length limit, ends it.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { MODELS, modelPath } from './lib/paths.mjs';
import { startServer } from './lib/server.mjs';

const stories = modelPath(MODELS.stories);

const SCHEMA = {
  type: 'object',
  properties: {
    mood: { type: 'string', enum: ['happy', 'sad', 'sleepy'] },
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0 },
    likes_cats: { type: 'boolean' },
    pets: { type: 'array', items: { enum: ['cat', 'dog'] }, maxItems: 3 },
  },
  required: ['mood', 'name', 'age', 'likes_cats', 'pets'],
  additionalProperties: false,
};

// Checks a parsed value against SCHEMA by hand (the keywords it uses, nothing more).
function assertMatchesSchema(value) {
  assert.equal(typeof value, 'object');
  assert.ok(value !== null && !Array.isArray(value));
  assert.deepEqual(Object.keys(value).sort(), ['age', 'likes_cats', 'mood', 'name', 'pets']);
  assert.ok(SCHEMA.properties.mood.enum.includes(value.mood), `mood ${value.mood}`);
  assert.equal(typeof value.name, 'string');
  assert.ok([...value.name].length <= 12, `name ${JSON.stringify(value.name)}`);
  assert.ok(Number.isInteger(value.age) && value.age >= 0, `age ${value.age}`);
  assert.equal(typeof value.likes_cats, 'boolean');
  assert.ok(Array.isArray(value.pets) && value.pets.length <= 3);
  for (const p of value.pets) assert.ok(p === 'cat' || p === 'dog', `pet ${p}`);
}

// Sampling that keeps the tiny model from being greedy-stuck; seeds make failures reproducible.
const OPTIONS = { temperature: 0.8, seed: 5, num_predict: 400 };

describe('structured output', { skip: !stories && 'stories model missing' }, () => {
  let server;
  let ollama;
  let openai;
  before(async () => {
    server = await startServer({ model: stories, args: ['--parallel', '2'] });
    ollama = new Ollama({ host: server.url });
    openai = new OpenAI({ baseURL: server.url + '/v1', apiKey: server.apiKey || 'unused', maxRetries: 0, timeout: 120000 });
  });
  after(async () => {
    await server?.stop();
  });

  it('ollama generate and chat with a schema `format` give JSON valid against it', async () => {
    for (const seed of [1, 2, 3]) {
      const gen = await ollama.generate({ model: server.modelName, prompt: 'Tell me about a girl.', format: SCHEMA, stream: false,
                                          options: { ...OPTIONS, seed } });
      assert.equal(gen.done_reason, 'stop', gen.response);
      assertMatchesSchema(JSON.parse(gen.response));
    }
    let streamed = '';
    let last;
    for await (const part of await ollama.chat({ model: server.modelName, messages: [{ role: 'user', content: 'Describe a dog.' }],
                                                  format: SCHEMA, stream: true, options: OPTIONS })) {
      streamed += part.message.content;
      last = part;
    }
    assert.equal(last.done_reason, 'stop', streamed);
    assertMatchesSchema(JSON.parse(streamed));
  });

  it('ollama `format: "json"` gives a JSON object', async () => {
    // Any object may nest without bound, so only a finished output is parsed; unfinished, it
    // must still be the start of an object.
    const r = await ollama.generate({ model: server.modelName, prompt: 'JSON:', format: 'json', stream: false,
                                      options: { ...OPTIONS, num_predict: 200 } });
    assert.ok(r.response.startsWith('{'), r.response);
    if (r.done_reason === 'stop') {
      const v = JSON.parse(r.response);
      assert.ok(typeof v === 'object' && v !== null && !Array.isArray(v));
    } else {
      assert.equal(r.done_reason, 'length');
    }
  });

  it('openai chat response_format json_schema gives JSON valid against it', async () => {
    const r = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'A cat story as JSON.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'story', strict: true, schema: SCHEMA } },
      max_tokens: 400,
      seed: 9,
      n: 2,
    });
    assert.equal(r.choices.length, 2);
    for (const choice of r.choices) {
      assert.equal(choice.finish_reason, 'stop', choice.message.content);
      assertMatchesSchema(JSON.parse(choice.message.content));
    }
  });

  it('openai completions with llama-server `grammar` follow it; a bad schema is a 400', async () => {
    const r = await openai.completions.create({ model: 'x', prompt: 'Once upon a time', max_tokens: 50, seed: 3,
                                                grammar: 'root ::= ("yes" | "no") "!"' });
    assert.match(r.choices[0].text, /^(yes|no)!$/);
    assert.equal(r.choices[0].finish_reason, 'stop');
    await assert.rejects(
      openai.chat.completions.create({
        model: 'x', messages: [{ role: 'user', content: 'hi' }],
        response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'integer', maximum: 5 } } },
      }),
      (err) => err instanceof OpenAI.BadRequestError && /unsupported keyword 'maximum'/.test(err.message));
  });
});
