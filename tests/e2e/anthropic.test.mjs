// The Anthropic Messages dialect through the official `@anthropic-ai/sdk` client against a real
// `hearth serve`: messages streaming and not (the same text, and the same text the OpenAI chat
// route gives for the same conversation), system prompts, stop_sequences, max_tokens,
// count_tokens agreeing with usage, seeds-free determinism at temperature 0, and errors as the
// SDK's error classes with Anthropic's error body.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { MODELS, modelPath } from './lib/paths.mjs';
import { startServer } from './lib/server.mjs';
import { assertErrorShape } from './lib/checks.mjs';

const stories = modelPath(MODELS.stories);
const N = 24;

describe('anthropic client', { skip: !stories && 'stories model missing' }, () => {
  let server;
  let anthropic;
  before(async () => {
    server = await startServer({ model: stories, args: ['--parallel', '2'] });
    anthropic = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  });
  after(async () => {
    await server?.stop();
  });

  const conversation = {
    system: 'You tell short stories.',
    messages: [{ role: 'user', content: 'Tell me a story about a bird.' }],
  };

  it('messages.create answers like OpenAI chat on the same conversation', async () => {
    const m = await anthropic.messages.create({ model: server.modelName, max_tokens: N, temperature: 0, ...conversation });
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.match(m.id, /^msg_/);
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0].type, 'text');
    assert.ok(['max_tokens', 'end_turn'].includes(m.stop_reason));
    assert.equal(m.stop_sequence ?? null, null);
    assert.ok(m.usage.input_tokens > 0);
    assert.ok(m.usage.output_tokens > 0 && m.usage.output_tokens <= N);

    const chat = await server.postJson('/v1/chat/completions', {
      messages: [{ role: 'system', content: conversation.system }, ...conversation.messages],
      max_tokens: N,
      temperature: 0,
    });
    assert.equal(m.content[0].text, chat.choices[0].message.content);
    assert.equal(m.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(m.usage.output_tokens, chat.usage.completion_tokens);
  });

  it('messages.stream gives the same message, with the documented event sequence', async () => {
    const whole = await anthropic.messages.create({ model: server.modelName, max_tokens: N, temperature: 0, ...conversation });
    const stream = anthropic.messages.stream({ model: server.modelName, max_tokens: N, temperature: 0, ...conversation });
    const types = [];
    let text = '';
    stream.on('streamEvent', (ev) => types.push(ev.type));
    stream.on('text', (delta) => {
      text += delta;
    });
    const final = await stream.finalMessage();
    assert.equal(text, whole.content[0].text);
    assert.equal(final.content[0].text, whole.content[0].text);
    assert.equal(final.stop_reason, whole.stop_reason);
    assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
    assert.equal(types[0], 'message_start');
    assert.equal(types[1], 'content_block_start');
    assert.ok(types.includes('content_block_delta'));
    assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  });

  it('stop_sequences stop the text and are reported', async () => {
    const whole = await anthropic.messages.create({ model: server.modelName, max_tokens: 48, temperature: 0, ...conversation });
    const text = whole.content[0].text;
    // A stop sequence taken from inside the greedy text: the reply must end right before it.
    const words = text.split(/\s+/).filter((w) => w.length >= 3);
    assert.ok(words.length >= 3, `not enough words in '${text}'`);
    const stopWord = words[2];
    const cut = text.indexOf(stopWord);
    const m = await anthropic.messages.create({ model: server.modelName, max_tokens: 48, temperature: 0, stop_sequences: [stopWord], ...conversation });
    assert.equal(m.stop_reason, 'stop_sequence');
    assert.equal(m.stop_sequence, stopWord);
    assert.equal(m.content[0].text, text.slice(0, cut));
    const streamed = await anthropic.messages.stream({ model: server.modelName, max_tokens: 48, temperature: 0, stop_sequences: [stopWord], ...conversation }).finalMessage();
    assert.equal(streamed.content[0].text, text.slice(0, cut));
    assert.equal(streamed.stop_reason, 'stop_sequence');
  });

  it('max_tokens ends with stop_reason max_tokens', async () => {
    const m = await anthropic.messages.create({ model: server.modelName, max_tokens: 3, temperature: 0, messages: conversation.messages });
    assert.equal(m.stop_reason, 'max_tokens');
    assert.equal(m.usage.output_tokens, 3);
  });

  it('count_tokens agrees with the input tokens of a request', async () => {
    const counted = await anthropic.messages.countTokens({ model: server.modelName, ...conversation });
    const m = await anthropic.messages.create({ model: server.modelName, max_tokens: 1, ...conversation });
    assert.equal(counted.input_tokens, m.usage.input_tokens);
    const longer = await anthropic.messages.countTokens({
      model: server.modelName,
      system: conversation.system,
      messages: [...conversation.messages, { role: 'assistant', content: 'Once there was a bird.' }, { role: 'user', content: 'More!' }],
    });
    assert.ok(longer.input_tokens > counted.input_tokens + 5, `${longer.input_tokens} vs ${counted.input_tokens}`);
    const noSystem = await anthropic.messages.countTokens({ model: server.modelName, messages: conversation.messages });
    assert.ok(noSystem.input_tokens < counted.input_tokens, 'the system prompt is not counted');
  });

  it('content blocks and multi-turn conversations are accepted', async () => {
    const m = await anthropic.messages.create({
      model: server.modelName,
      max_tokens: 4,
      temperature: 0,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: [{ type: 'text', text: 'A story?' }] },
      ],
    });
    assert.equal(m.content[0].type, 'text');
  });

  it('errors come back as the SDK error classes with Anthropic bodies', async () => {
    await assert.rejects(
      anthropic.messages.create({ model: server.modelName, max_tokens: 4, messages: [] }),
      (e) => {
        assert.ok(e instanceof Anthropic.BadRequestError, e.constructor.name);
        assert.equal(e.status, 400);
        assertErrorShape('anthropic', e.error, 400);
        return true;
      },
    );
    await assert.rejects(
      anthropic.messages.create({ model: server.modelName, max_tokens: 4, messages: [{ role: 'user', content: 'x' }], top_p: 3 }),
      (e) => e instanceof Anthropic.BadRequestError && /top_p/.test(e.message),
    );
    // max_tokens is required by the Messages API.
    const r = await server.request('POST', '/v1/messages', { model: server.modelName, messages: [{ role: 'user', content: 'x' }] });
    assert.equal(r.status, 400);
    assertErrorShape('anthropic', r.json, 400);
    server.checkHealthy();
  });
});
