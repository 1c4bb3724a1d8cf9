// Tool calls through the official clients: a forced tool_choice (OpenAI "required" and a named
// function, Anthropic {type: "any"}, ollama's chat with Hearth's tool_choice extension) makes the
// random-weight model write a call in its template's syntax (Qwen 2.5's <tool_call>, given with
// --chat-template-file); the server parses it into structured calls whose arguments validate
// against the schema, streamed and not, in all three APIs; a round trip sends the result back;
// bad tool input is a 400 in each API's error shape. The Responses API's function_call items too.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { MODELS, modelPath, modelsDir } from './lib/paths.mjs';
import { startServer } from './lib/server.mjs';

const qwen = modelPath(MODELS.qwen2);
const template = path.join(modelsDir(), '..', 'templates', 'Qwen-Qwen2.5-7B-Instruct.jinja');

const PARAMS = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 10 },
    unit: { type: 'string', enum: ['c', 'f'] },
  },
  required: ['city', 'unit'],
  additionalProperties: false,
};
const OPENAI_TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: PARAMS } },
  { type: 'function', function: { name: 'get_time', description: 'Time in a city', parameters: PARAMS } },
];
const ANTHROPIC_TOOLS = OPENAI_TOOLS.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: PARAMS }));
const USER = { role: 'user', content: 'What is the weather in Paris?' };
const NAMES = ['get_weather', 'get_time'];

function assertArgs(args) {
  assert.deepEqual(Object.keys(args).sort(), ['city', 'unit']);
  assert.equal(typeof args.city, 'string');
  assert.ok([...args.city].length <= 10, `city ${JSON.stringify(args.city)}`);
  assert.ok(['c', 'f'].includes(args.unit), `unit ${args.unit}`);
}

describe('tool calls', { skip: !qwen && 'qwen2 model missing' }, () => {
  let server;
  let openai;
  let anthropic;
  let ollama;
  before(async () => {
    server = await startServer({ model: qwen, args: ['--parallel', '2', '--chat-template-file', template] });
    openai = new OpenAI({ baseURL: server.url + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 120000 });
    anthropic = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
    ollama = new Ollama({ host: server.url });
  });
  after(async () => {
    await server?.stop();
  });

  it('OpenAI tool_choice "required" returns structured calls (non-streaming)', async () => {
    const r = await openai.chat.completions.create({
      model: 'm', messages: [USER], tools: OPENAI_TOOLS, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 300, seed: 3, temperature: 0.8,
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.tool_calls.length, 1);
    for (const call of choice.message.tool_calls) {
      assert.equal(call.type, 'function');
      assert.ok(call.id.startsWith('call_'));
      assert.ok(NAMES.includes(call.function.name));
      assertArgs(JSON.parse(call.function.arguments));
    }
    assert.ok(!(choice.message.content || '').includes('<tool_call>'));
  });

  it('OpenAI named function, streamed as tool_calls deltas, then a round trip with the result', async () => {
    const stream = await openai.chat.completions.create({
      model: 'm', messages: [USER], tools: OPENAI_TOOLS, parallel_tool_calls: false, max_tokens: 300, seed: 4, temperature: 0.8,
      tool_choice: { type: 'function', function: { name: 'get_time' } }, stream: true,
    });
    const calls = [];
    let content = '';
    let finish = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (!c) continue;
      content += c.delta?.content || '';
      for (const d of c.delta?.tool_calls || []) {
        if (!calls[d.index]) calls[d.index] = { id: d.id, name: '', arguments: '' };
        calls[d.index].name += d.function?.name || '';
        calls[d.index].arguments += d.function?.arguments || '';
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
    assert.equal(finish, 'tool_calls');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, 'get_time');
    assertArgs(JSON.parse(calls[0].arguments));
    assert.ok(!content.includes('<tool_call>'));

    const back = await openai.chat.completions.create({
      model: 'm', max_tokens: 8, tools: OPENAI_TOOLS,
      messages: [USER, { role: 'assistant', content: null, tool_calls: [{ id: calls[0].id, type: 'function', function: { name: calls[0].name, arguments: calls[0].arguments } }] },
        { role: 'tool', tool_call_id: calls[0].id, content: '{"time": "12:00"}' }],
    });
    assert.equal(back.choices[0].message.role, 'assistant');
  });

  it('Responses API: a forced call is a function_call output item, streamed and not', async () => {
    const tools = [{ type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: PARAMS }];
    const req = { model: 'm', input: 'Weather in Paris?', tools, tool_choice: 'required', parallel_tool_calls: false, max_output_tokens: 300, temperature: 0.8 };
    const r = await openai.responses.create(req);
    const call = r.output.find((i) => i.type === 'function_call');
    assert.ok(call, JSON.stringify(r.output));
    assert.equal(call.name, 'get_weather');
    assertArgs(JSON.parse(call.arguments));
    let args = '';
    let done = null;
    for await (const ev of await openai.responses.create({ ...req, stream: true })) {
      if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
      if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call') done = ev.item;
    }
    assert.ok(done);
    assert.equal(done.arguments, args);
    assertArgs(JSON.parse(args));
  });

  it('Anthropic tool_choice any: tool_use blocks, streamed with input_json_delta and not', async () => {
    const msg = await anthropic.messages.create({
      model: 'm', max_tokens: 300, messages: [USER], tools: ANTHROPIC_TOOLS, tool_choice: { type: 'any', disable_parallel_tool_use: true }, temperature: 0.8,
    });
    assert.equal(msg.stop_reason, 'tool_use');
    const uses = msg.content.filter((b) => b.type === 'tool_use');
    assert.ok(uses.length >= 1);
    for (const u of uses) {
      assert.ok(NAMES.includes(u.name));
      assertArgs(u.input);
    }
    const stream = anthropic.messages.stream({
      model: 'm', max_tokens: 300, messages: [USER], tools: ANTHROPIC_TOOLS, temperature: 0.8,
      tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
    });
    let partial = '';
    stream.on('inputJson', (delta) => { partial += delta; });
    const final = await stream.finalMessage();
    const use = final.content.find((b) => b.type === 'tool_use');
    assert.ok(use, JSON.stringify(final.content));
    assert.equal(use.name, 'get_weather');
    assertArgs(use.input);
    assert.ok(partial.length > 0);
    assert.equal(final.stop_reason, 'tool_use');
  });

  it('ollama chat with tools and a forced call gives message.tool_calls, streamed and not', async () => {
    const r = await ollama.chat({ model: server.modelName, messages: [USER], tools: OPENAI_TOOLS, tool_choice: 'required', parallel_tool_calls: false, options: { num_predict: 300, seed: 6 } });
    assert.ok(r.message.tool_calls?.length >= 1, JSON.stringify(r.message));
    for (const c of r.message.tool_calls) {
      assert.ok(NAMES.includes(c.function.name));
      assertArgs(c.function.arguments);
    }
    const parts = await ollama.chat({ model: server.modelName, messages: [USER], tools: OPENAI_TOOLS, stream: true,
      tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false, options: { num_predict: 300, seed: 7 } });
    const calls = [];
    let content = '';
    for await (const part of parts) {
      content += part.message?.content || '';
      calls.push(...(part.message?.tool_calls || []));
    }
    assert.ok(calls.length >= 1);
    assert.equal(calls[0].function.name, 'get_weather');
    assertArgs(calls[0].function.arguments);
    assert.ok(!content.includes('<tool_call>'));
  });

  it('tool_choice auto: free text, and a call the reply opens is a schema-valid call (opened by an assistant prefill)', async () => {
    // The random model writes text and no call on its own (the grammar is lazy: nothing holds it).
    const plain = await openai.chat.completions.create({ model: 'm', messages: [USER], tools: OPENAI_TOOLS, max_tokens: 16, seed: 1, temperature: 0 });
    assert.equal(plain.choices[0].finish_reason, 'length');
    assert.ok(plain.choices[0].message.content.length > 0);
    // The shared models have no single <tool_call> token for a logit_bias to force, so the
    // prefill writes the opener: the reply continues inside the call and the grammar holds it.
    const opened = [USER, { role: 'assistant', content: 'Let me check. <tool_call>' }];
    for (const seed of [1, 2, 3]) {
      const r = await openai.chat.completions.create({
        model: 'm', messages: opened, tools: OPENAI_TOOLS, tool_choice: 'auto', parallel_tool_calls: false, max_tokens: 300, seed, temperature: 0.8,
      });
      // The parser reads the prefill first, so the call it opened comes back as a call.
      const message = r.choices[0].message;
      assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(message));
      assert.equal(message.tool_calls.length, 1);
      assert.ok(NAMES.includes(message.tool_calls[0].function.name), JSON.stringify(message));
      assertArgs(JSON.parse(message.tool_calls[0].function.arguments));
      assert.ok(!(message.content || '').includes('tool_call'), message.content);
    }
  });

  it('bad tool input is a 400 in each API', async () => {
    await assert.rejects(openai.chat.completions.create({ model: 'm', messages: [USER], tools: OPENAI_TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }),
      (e) => e.status === 400 && /nope/.test(e.message));
    await assert.rejects(anthropic.messages.create({ model: 'm', max_tokens: 5, messages: [USER], tools: ANTHROPIC_TOOLS, tool_choice: { type: 'tool', name: 'nope' } }),
      (e) => e.status === 400 && e.error?.type === 'error');
    await assert.rejects(ollama.chat({ model: server.modelName, messages: [USER], tools: [{ type: 'function', function: { name: '' } }] }),
      (e) => e.status_code === 400);
    await assert.rejects(openai.chat.completions.create({ model: 'm', messages: [USER], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { x: { type: 'string', pattern: '(?=x)' } } } } }], tool_choice: 'required' }),
      (e) => e.status === 400);
  });
});
