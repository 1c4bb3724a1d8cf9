// Reasoning output through the official clients: with DeepSeek R1's template (given with
// --chat-template-file) the prompt opens <think>, so the random-weight model's text is thinking
// until it writes </think>. It must come back as ollama's message.thinking, OpenAI's
// reasoning_content and Anthropic's thinking blocks, streamed and not, and never in the answer;
// turning thinking off (think: false, reasoning_effort "none", thinking disabled) closes the
// <think> in the prompt and the text is the answer again. A thinking budget (Anthropic's
// budget_tokens, OpenAI chat's thinking_budget extension) makes the engine write </think> after
// that many reasoning tokens, and the answer continues. The Responses API returns the thinking
// as a reasoning output item (reasoning_text content), streamed as response.reasoning_text.delta.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { MODELS, modelPath, modelsDir } from './lib/paths.mjs';
import { startServer } from './lib/server.mjs';

const qwen = modelPath(MODELS.qwen2);
const template = path.join(modelsDir(), '..', 'templates', 'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja');
const USER = { role: 'user', content: 'Why is the sky blue?' };
// A short reply with a fixed seed; the random model does not write </think> within it (checked:
// then all of it is thinking).
const N = 12;

describe('reasoning output', { skip: !qwen && 'qwen2 model missing' }, () => {
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

  it('ollama: message.thinking streamed and not; think false gives the answer', async () => {
    const options = { num_predict: N, seed: 1, temperature: 0 };
    const r = await ollama.chat({ model: server.modelName, messages: [USER], options });
    assert.ok(r.message.thinking.length > 0);
    assert.equal(r.message.content, '');
    let thinking = '';
    let content = '';
    for await (const part of await ollama.chat({ model: server.modelName, messages: [USER], options, stream: true })) {
      thinking += part.message.thinking || '';
      content += part.message.content || '';
    }
    assert.equal(thinking, r.message.thinking);
    assert.equal(content, '');
    const off = await ollama.chat({ model: server.modelName, messages: [USER], options, think: false });
    assert.ok(off.message.content.length > 0);
    assert.equal(off.message.thinking, undefined);
  });

  it('OpenAI: reasoning_content streamed and not; reasoning_effort none gives the answer', async () => {
    const req = { model: 'm', messages: [USER], max_tokens: N, seed: 1, temperature: 0 };
    const r = await openai.chat.completions.create(req);
    const reasoning = r.choices[0].message.reasoning_content;
    assert.ok(reasoning.length > 0);
    assert.equal(r.choices[0].message.content, '');
    // Every generated token was reasoning (the end-of-generation token, if any, is not).
    const details = r.usage.completion_tokens_details;
    assert.ok(details.reasoning_tokens > 0 && details.reasoning_tokens <= r.usage.completion_tokens, JSON.stringify(r.usage));
    assert.ok(details.reasoning_tokens >= r.usage.completion_tokens - 1, JSON.stringify(r.usage));
    let streamed = '';
    for await (const chunk of await openai.chat.completions.create({ ...req, stream: true })) {
      streamed += chunk.choices[0]?.delta?.reasoning_content || '';
      assert.ok(!chunk.choices[0]?.delta?.content);
    }
    assert.equal(streamed, reasoning);
    const off = await openai.chat.completions.create({ ...req, reasoning_effort: 'none' });
    assert.ok(off.choices[0].message.content.length > 0);
    assert.equal(off.choices[0].message.reasoning_content, undefined);
    assert.equal(off.usage.completion_tokens_details.reasoning_tokens, 0);
  });

  it('Anthropic: thinking blocks streamed and not; thinking disabled gives text', async () => {
    const req = { model: 'm', max_tokens: N, messages: [USER], temperature: 0 };
    const msg = await anthropic.messages.create(req);
    const block = msg.content.find((b) => b.type === 'thinking');
    assert.ok(block && block.thinking.length > 0, JSON.stringify(msg.content));
    const stream = anthropic.messages.stream(req);
    let thinking = '';
    stream.on('thinking', (delta) => { thinking += delta; });
    await stream.finalMessage();
    assert.equal(thinking, block.thinking);
    const off = await anthropic.messages.create({ ...req, thinking: { type: 'disabled' } });
    assert.ok(!off.content.some((b) => b.type === 'thinking'));
    assert.ok(off.content.find((b) => b.type === 'text').text.length > 0);
  });

  it('a thinking budget closes the reasoning and the answer continues (Anthropic, OpenAI)', async () => {
    const req = { model: 'm', max_tokens: 24, messages: [USER], temperature: 0 };
    const msg = await anthropic.messages.create({ ...req, thinking: { type: 'enabled', budget_tokens: 5 } });
    const thinking = msg.content.find((b) => b.type === 'thinking');
    const text = msg.content.find((b) => b.type === 'text');
    assert.ok(thinking && thinking.thinking.length > 0, JSON.stringify(msg.content));
    assert.ok(text && text.text.length > 0, JSON.stringify(msg.content));
    assert.ok(!text.text.includes('</think>'));
    // The unbudgeted reply with the same seed is all thinking (see N above).
    const full = await anthropic.messages.create(req);
    assert.ok(full.content.find((b) => b.type === 'thinking').thinking.startsWith(thinking.thinking.trimEnd()));
    const o = await openai.chat.completions.create({ model: 'm', messages: [USER], max_tokens: 24, seed: 1, temperature: 0, thinking_budget: 3 });
    assert.ok(o.choices[0].message.reasoning_content.length > 0);
    assert.ok(o.choices[0].message.content.length > 0);
    // The budget's tokens were reasoning; the closing text and the answer were not.
    assert.equal(o.usage.completion_tokens_details.reasoning_tokens, 3, JSON.stringify(o.usage));
    assert.ok(o.usage.completion_tokens > 3);
    let reasoning = '';
    let content = '';
    for await (const chunk of await openai.chat.completions.create({ model: 'm', messages: [USER], max_tokens: 24, seed: 1, temperature: 0, thinking_budget: 3, stream: true })) {
      reasoning += chunk.choices[0]?.delta?.reasoning_content || '';
      content += chunk.choices[0]?.delta?.content || '';
    }
    assert.equal(reasoning, o.choices[0].message.reasoning_content);
    assert.equal(content, o.choices[0].message.content);
    await assert.rejects(anthropic.messages.create({ ...req, thinking: { type: 'enabled', budget_tokens: -1 } }), (e) => e.status === 400);
  });

  it('Responses API: a reasoning item with reasoning_text, streamed and not; reasoning.effort', async () => {
    const req = { model: 'm', input: 'Why is the sky blue?', max_output_tokens: N, temperature: 0, reasoning: { effort: 'high' } };
    const r = await openai.responses.create(req);
    assert.equal(r.output[0].type, 'reasoning', JSON.stringify(r.output));
    assert.equal(r.output[0].content[0].type, 'reasoning_text');
    const text = r.output[0].content[0].text;
    assert.ok(text.length > 0);
    assert.equal(r.output[1].type, 'message');
    assert.equal(r.reasoning.effort, 'high');
    const reasoningTokens = r.usage.output_tokens_details.reasoning_tokens;
    assert.ok(reasoningTokens > 0 && reasoningTokens <= r.usage.output_tokens, JSON.stringify(r.usage));
    let streamed = '';
    let doneText = null;
    const indices = [];
    for await (const ev of await openai.responses.create({ ...req, stream: true })) {
      if (ev.type === 'response.reasoning_text.delta') streamed += ev.delta;
      if (ev.type === 'response.reasoning_text.done') doneText = ev.text;
      if (ev.type === 'response.output_item.added') indices.push([ev.output_index, ev.item.type]);
    }
    assert.equal(streamed, text);
    assert.equal(doneText, text);
    assert.deepEqual(indices, [[0, 'reasoning'], [1, 'message']]);
    const off = await openai.responses.create({ ...req, reasoning: { effort: 'none' } });
    assert.ok(!off.output.some((i) => i.type === 'reasoning'));
    assert.equal(off.usage.output_tokens_details.reasoning_tokens, 0);
  });

  it('ollama think levels are accepted, other values are a 400', async () => {
    const options = { num_predict: 4, seed: 1, temperature: 0 };
    const r = await ollama.chat({ model: server.modelName, messages: [USER], options, think: 'high' });
    assert.ok(r.message.thinking.length > 0);
    await assert.rejects(ollama.chat({ model: server.modelName, messages: [USER], options, think: 'extreme' }), (e) => e.status_code === 400);
  });
});

// Qwen3's template opens no <think> itself (the model writes it); an assistant prefill that
// ends in "<think>\n" starts the reply inside the reasoning, so the budget applies there too, and
// think: false renders Qwen3's empty <think></think> so the whole reply is the answer.
const qwen3 = modelPath(MODELS.qwen3);
const qwen3Template = path.join(modelsDir(), '..', 'templates', 'Qwen-Qwen3-0.6B.jinja');

describe('reasoning with Qwen3', { skip: !qwen3 && 'qwen3 model missing' }, () => {
  let server;
  let ollama;
  before(async () => {
    server = await startServer({ model: qwen3, args: ['--chat-template-file', qwen3Template] });
    ollama = new Ollama({ host: server.url });
  });
  after(async () => {
    await server?.stop();
  });

  it('a prefilled <think> is reasoning, closed by the budget; think false is the answer', async () => {
    const messages = [USER, { role: 'assistant', content: '<think>\n' }];
    const options = { num_predict: 20, seed: 1, temperature: 0 };
    const open = await ollama.chat({ model: server.modelName, messages, options });
    assert.ok(open.message.thinking.length > 0, JSON.stringify(open.message));
    const r = await fetch(server.url + '/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages, max_tokens: 20, seed: 1, temperature: 0, thinking_budget: 4 }),
    }).then((x) => x.json());
    const m = r.choices[0].message;
    assert.ok(m.reasoning_content.length > 0, JSON.stringify(m));
    assert.ok(m.content.length > 0, JSON.stringify(m));
    const off = await ollama.chat({ model: server.modelName, messages: [USER], options, think: false });
    assert.ok(off.message.content.length > 0);
    assert.equal(off.message.thinking, undefined);
  });
});
