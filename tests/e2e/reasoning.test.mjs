// Reasoning output through the official clients: with DeepSeek R1's template (given with
// --chat-template-file) the prompt opens <think>, so the random-weight model's text is thinking
// until it writes </think>. It must come back as ollama's message.thinking, OpenAI's
// reasoning_content and Anthropic's thinking blocks, streamed and not, and never in the answer;
// turning thinking off (think: false, reasoning_effort "none", thinking disabled) closes the
// <think> in the prompt and the text is the answer again.
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
    let streamed = '';
    for await (const chunk of await openai.chat.completions.create({ ...req, stream: true })) {
      streamed += chunk.choices[0]?.delta?.reasoning_content || '';
      assert.ok(!chunk.choices[0]?.delta?.content);
    }
    assert.equal(streamed, reasoning);
    const off = await openai.chat.completions.create({ ...req, reasoning_effort: 'none' });
    assert.ok(off.choices[0].message.content.length > 0);
    assert.equal(off.choices[0].message.reasoning_content, undefined);
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
});
