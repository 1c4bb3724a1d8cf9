// The model store through the official `ollama` npm client against `hearth serve` without -m:
// blob upload (HEAD/POST /api/blobs, digest checked), create with streamed progress (files,
// system, template, parameters, messages, license), list, show, generate with the Modelfile's
// template, system and parameters applied, copy, delete, the errors in between, and a store
// that is consistent afterwards (every manifest's blobs exist, no temporary files).
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

const stories = modelPath(MODELS.stories);

function sha256(bytes) {
  return 'sha256:' + crypto.createHash('sha256').update(bytes).digest('hex');
}

describe('ollama client: the model store', { skip: !stories && 'stories model missing' }, () => {
  let server;
  let ollama;
  let root;
  const gguf = stories && fs.readFileSync(stories);
  const digest = gguf && sha256(gguf);
  const SYSTEM = 'Lily and Tom went to the park.';
  // A single-turn template: the stored MESSAGE turn is rendered with its response, then the prompt.
  const TEMPLATE = '{{ if .System }}{{ .System }} {{ end }}{{ .Prompt }}.{{ .Response }} ';

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-store-e2e-'));
    server = await startServer({ model: null, args: ['--parallel', '1'], env: { HEARTH_MODELS: root, HEARTH_OLLAMA_MODELS: 'off', HEARTH_MAX_LOADED_MODELS: '1' } });
    ollama = new Ollama({ host: server.url });
  });
  after(async () => {
    await server?.stop();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('starts empty and takes a blob only when its digest matches', async () => {
    assert.deepEqual((await ollama.list()).models, []);
    assert.equal((await server.fetch(`/api/blobs/${digest}`, { method: 'HEAD' })).status, 404);
    const wrong = await server.fetch(`/api/blobs/${sha256('something else')}`, { method: 'POST', body: gguf });
    assert.equal(wrong.status, 400);
    assert.match((await wrong.json()).error, /digest mismatch/);
    const bad = await server.fetch('/api/blobs/sha256:not-hex', { method: 'POST', body: 'x' });
    assert.equal(bad.status, 400);
    const up = await server.fetch(`/api/blobs/${digest}`, { method: 'POST', body: gguf });
    assert.equal(up.status, 201);
    assert.equal((await server.fetch(`/api/blobs/${digest}`, { method: 'HEAD' })).status, 200);
    assert.deepEqual(storeProblems(root), []);
  });

  it('creates a model with streamed progress, lists and shows it', async () => {
    const stream = await ollama.create({
      model: 'tiny',
      files: { 'stories.gguf': digest },
      system: SYSTEM,
      template: TEMPLATE,
      parameters: { temperature: 0, num_predict: 10, repeat_penalty: 1, stop: ['zzz'] },
      messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }],
      license: 'MIT',
      stream: true,
    });
    const statuses = [];
    for await (const part of stream) statuses.push(part.status);
    assert.equal(statuses.at(-1), 'success');
    assert.ok(statuses.includes(`using existing layer ${digest}`), statuses.join('\n'));
    assert.ok(statuses.includes('writing manifest'));

    const tags = await ollama.list();
    assert.equal(tags.models.length, 1);
    assert.equal(tags.models[0].name, 'tiny:latest');
    assert.equal(tags.models[0].details.family, 'llama');
    assert.equal(tags.models[0].details.quantization_level, 'F32');
    assert.ok(tags.models[0].size > gguf.length);
    assert.match(tags.models[0].digest, /^[0-9a-f]{64}$/);

    const show = await ollama.show({ model: 'tiny' });
    assert.equal(show.system, SYSTEM);
    assert.equal(show.template, TEMPLATE);
    assert.equal(show.license, 'MIT');
    assert.match(show.parameters, /temperature\s+0/);
    assert.match(show.parameters, /stop\s+"zzz"/);
    assert.match(show.modelfile, /^FROM .*sha256-/m);
    assert.match(show.modelfile, /^PARAMETER num_predict 10$/m);
    assert.equal(show.model_info['general.architecture'], 'llama');
    assert.deepEqual(show.messages, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }]);
    assert.ok(show.capabilities.includes('completion'));
    assert.deepEqual(storeProblems(root), []);
  });

  it('generates with the stored template, system prompt and parameters', async () => {
    const templated = await ollama.generate({ model: 'tiny', prompt: 'One day', stream: false });
    assert.equal(templated.eval_count, 10, 'num_predict from the Modelfile');
    // The same text as the raw prompt the template makes of system, history and prompt, with the
    // same options given explicitly.
    const raw = await ollama.generate({
      model: 'tiny', prompt: `${SYSTEM} hi.hello One day.`, raw: true, stream: false,
      options: { temperature: 0, num_predict: 10, repeat_penalty: 1 },
    });
    assert.equal(templated.response, raw.response);
    assert.equal(templated.prompt_eval_count, raw.prompt_eval_count);
    // A request's own options win over the Modelfile's.
    const short = await ollama.generate({ model: 'tiny', prompt: 'One day', stream: false, options: { num_predict: 3 } });
    assert.equal(short.eval_count, 3);
    const ps = await ollama.ps();
    assert.equal(ps.models[0].name, 'tiny:latest');

    // A model made from another: its own system prompt, the base's parameters; asking for it
    // replaces the loaded model, and asking for the first one again switches back.
    const done = await ollama.create({ model: 'other', from: 'tiny', system: 'Tom had a red ball.', stream: false });
    assert.equal(done.status, 'success');
    const other = await ollama.generate({ model: 'other', prompt: 'One day', stream: false });
    assert.equal(other.eval_count, 10);
    const otherRaw = await ollama.generate({
      model: 'other', prompt: 'Tom had a red ball. hi.hello One day.', raw: true, stream: false,
      options: { temperature: 0, num_predict: 10, repeat_penalty: 1 },
    });
    assert.equal(other.response, otherRaw.response);
    assert.equal(other.prompt_eval_count, otherRaw.prompt_eval_count);
    assert.deepEqual((await ollama.ps()).models.map((m) => m.name), ['other:latest']);
    const back = await ollama.generate({ model: 'tiny', prompt: 'One day', stream: false });
    assert.equal(back.response, templated.response);
    assert.deepEqual((await ollama.ps()).models.map((m) => m.name), ['tiny:latest']);
    await ollama.delete({ model: 'other' });
  });

  it('copies and deletes, with ollama errors for missing models', async () => {
    await ollama.copy({ source: 'tiny', destination: 'me/tiny:v2' });
    assert.deepEqual((await ollama.list()).models.map((m) => m.name).sort(), ['me/tiny:v2', 'tiny:latest']);
    await ollama.delete({ model: 'tiny' });
    assert.deepEqual((await ollama.list()).models.map((m) => m.name), ['me/tiny:v2']);
    await assert.rejects(ollama.delete({ model: 'tiny' }), (e) => e.status_code === 404);
    await assert.rejects(ollama.show({ model: 'tiny' }), (e) => e.status_code === 404);
    await assert.rejects(ollama.generate({ model: 'tiny', prompt: 'x' }), (e) => e.status_code === 404);
    await assert.rejects(ollama.copy({ source: 'nobody', destination: 'x' }), (e) => e.status_code === 404);
    // The copy still has every blob, and generates.
    const r = await ollama.generate({ model: 'me/tiny:v2', prompt: 'One day', stream: false });
    assert.equal(r.eval_count, 10);
    assert.deepEqual(storeProblems(root), []);
  });

  it('refuses bad names, bad parameters and server paths with clear errors', async () => {
    await assert.rejects(ollama.create({ model: '../../etc/passwd', files: { 'a.gguf': digest }, stream: false }),
      (e) => e.status_code === 400 && /invalid model name/.test(e.error));
    await assert.rejects(ollama.create({ model: 'x:' + 't'.repeat(300), files: { 'a.gguf': digest }, stream: false }),
      (e) => e.status_code === 400 && /tag is 300 characters long/.test(e.error));
    await assert.rejects(ollama.create({ model: 'x', files: { 'a.gguf': digest }, parameters: { top_p: 3 }, stream: false }),
      (e) => e.status_code === 400 && /top_p/.test(e.error));
    await assert.rejects(ollama.create({ model: 'x', from: 'sha256:' + 'a'.repeat(64), stream: false }),
      (e) => e.status_code === 404);
    const local = await server.request('POST', '/api/create', { model: 'x', from: stories, stream: false });
    assert.equal(local.status, 400);
    assert.match(local.json.error, /--allow-local-files/);
    // A streamed create that fails ends its stream with an error line.
    const failing = await ollama.create({ model: 'x', from: 'nobody', stream: true });
    await assert.rejects((async () => { for await (const part of failing) void part; })(), /not found/);
    assert.deepEqual((await ollama.list()).models.map((m) => m.name), ['me/tiny:v2']);
    assert.deepEqual(storeProblems(root), []);
  });
});
