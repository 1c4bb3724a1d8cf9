// create with `quantize` through the official `ollama` npm client: an uploaded F16 GGUF becomes
// a Q4_K_M model with streamed progress, lists with its new quantization level and generates;
// an already quantized source and an unknown type are refused, and the store stays consistent.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Ollama } from 'ollama';
import { MODELS, modelPath } from './lib/paths.mjs';
import { startServer } from './lib/server.mjs';
import { storeProblems } from './lib/store_layout.mjs';

const f16 = modelPath(MODELS.llamaF16);

describe('ollama client: create --quantize', { skip: !f16 && 'random llama F16 model missing' }, () => {
  let server;
  let ollama;
  let root;
  const gguf = f16 && fs.readFileSync(f16);
  const digest = gguf && 'sha256:' + crypto.createHash('sha256').update(gguf).digest('hex');

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-quantize-e2e-'));
    server = await startServer({ model: null, args: ['--parallel', '1'], env: { HEARTH_MODELS: root, HEARTH_OLLAMA_MODELS: 'off' } });
    ollama = new Ollama({ host: server.url });
    const up = await server.fetch(`/api/blobs/${digest}`, { method: 'POST', body: gguf });
    assert.equal(up.status, 201);
  });
  after(async () => {
    await server?.stop();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('quantizes an F16 model to Q4_K_M with progress, and it generates', async () => {
    const stream = await ollama.create({ model: 'small:q4', files: { 'llama.gguf': digest }, quantize: 'q4_K_M', stream: true });
    const statuses = [];
    for await (const part of stream) statuses.push(part.status);
    assert.equal(statuses.at(-1), 'success');
    assert.ok(statuses.includes('quantizing F16 model to Q4_K_M'), statuses.join('\n'));
    const tags = await ollama.list();
    assert.equal(tags.models.length, 1);
    assert.equal(tags.models[0].details.quantization_level, 'Q4_K_M');
    assert.ok(tags.models[0].size < gguf.length / 2, 'a Q4_K_M model is well under half its F16 size');
    const show = await ollama.show({ model: 'small:q4' });
    assert.equal(show.model_info['general.file_type'], 15);
    const out = await ollama.generate({ model: 'small:q4', prompt: 'Once upon a time', stream: false,
      options: { temperature: 0, num_predict: 5 } });
    assert.equal(out.eval_count, 5);
  });

  it('refuses an already quantized model and unknown types', async () => {
    await assert.rejects(ollama.create({ model: 'again', from: 'small:q4', quantize: 'q8_0', stream: false }),
      /already quantized/);
    await assert.rejects(ollama.create({ model: 'odd', files: { 'llama.gguf': digest }, quantize: 'q3_k_xl', stream: false }),
      /unsupported quantization type/);
    assert.equal((await ollama.list()).models.length, 1);
    assert.deepEqual(storeProblems(root), []);
  });
});
