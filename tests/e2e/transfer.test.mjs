// Pull and push against Debian's real docker-registry, started by this test: the `hearth` CLI
// (create from a Modelfile, push --insecure, rm, pull --insecure, run) round-trips a model with
// identical manifest and blob digests and the same greedy answer; the official `ollama` npm
// client pulls and pushes with NDJSON progress; a blob corrupted on the registry fails the pull
// with a clear error and publishes nothing (the store stays consistent).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Ollama } from 'ollama';
import { dockerRegistryExecutable, startDockerRegistry } from './lib/docker_registry.mjs';
import { MODELS, hearthBin, inCI, modelPath } from './lib/paths.mjs';
import { startServer } from './lib/server.mjs';
import { manifestFile, storeProblems } from './lib/store_layout.mjs';

const stories = modelPath(MODELS.stories);
const haveRegistry = fs.existsSync(dockerRegistryExecutable());
if (!haveRegistry && inCI()) throw new Error('docker-registry missing (scripts/setup.sh installs it)');
const skip = (!stories && 'stories model missing') || (!haveRegistry && 'docker-registry missing');

// Runs the hearth CLI against `server` with no stdin (as a script would); resolves
// {code, signal, stdout, stderr}.
function hearthCli(server, ...args) {
  return new Promise((resolve) => {
    const proc = spawn(hearthBin(), args, {
      env: { ...process.env, HEARTH_HOST: server.url.replace(/^http:\/\//, ''), HEARTH_LOG_LEVEL: 'error', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => { stdout += d; });
    proc.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 120000);
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, signal, stdout, stderr });
    });
  });
}

function sha256File(file) {
  return 'sha256:' + crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

describe('pull and push against a real registry', { skip }, () => {
  let registry;
  let server;
  let ollama;
  let root;
  let work;

  const hearth = (...args) => hearthCli(server, ...args);

  before(async () => {
    registry = await startDockerRegistry();
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-transfer-e2e-'));
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-transfer-work-'));
    server = await startServer({ model: null, args: ['--parallel', '1'], env: { HEARTH_MODELS: root, HEARTH_OLLAMA_MODELS: 'off' } });
    ollama = new Ollama({ host: server.url });
  });
  after(async () => {
    await server?.stop();
    await registry?.stop();
    for (const d of [root, work]) if (d) fs.rmSync(d, { recursive: true, force: true });
  });

  it('round-trips a created model through the CLI: same digests, same greedy answer', async () => {
    const name = `${registry.address}/library/tiny:v1`;
    const modelfile = path.join(work, 'Modelfile');
    fs.writeFileSync(modelfile, [
      `FROM ${stories}`,
      'PARAMETER temperature 0',
      'PARAMETER seed 42',
      'PARAMETER num_predict 24',
      'SYSTEM """Lily and Tom went to the park."""',
      'TEMPLATE "{{ if .System }}{{ .System }} {{ end }}{{ .Prompt }}"',
      '',
    ].join('\n'));
    const created = await hearth('create', name, '-f', modelfile);
    assert.equal(created.code, 0, created.stderr);
    const manifestPath = manifestFile(root, name);
    const manifestBefore = fs.readFileSync(manifestPath, 'utf8');
    const blobsBefore = JSON.parse(manifestBefore).layers.map((l) => l.digest);
    const before = await hearth('run', name, 'Once upon a time');
    assert.equal(before.code, 0, before.stderr);
    assert.ok(before.stdout.trim().split(/\s+/).length >= 3, `the model answered: ${before.stdout}`);

    const pushed = await hearth('push', '--insecure', name);
    assert.equal(pushed.code, 0, pushed.stderr);
    const rm = await hearth('rm', name);
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal(fs.existsSync(manifestPath), false);
    for (const d of blobsBefore) assert.equal(fs.existsSync(path.join(root, 'blobs', d.replace(':', '-'))), false, `${d} removed`);

    const pulled = await hearth('pull', '--insecure', name);
    assert.equal(pulled.code, 0, pulled.stderr);
    assert.equal(fs.readFileSync(manifestPath, 'utf8'), manifestBefore);
    for (const d of blobsBefore) assert.equal(sha256File(path.join(root, 'blobs', d.replace(':', '-'))), d);
    const after = await hearth('run', name, 'Once upon a time');
    assert.equal(after.code, 0, after.stderr);
    assert.equal(after.stdout, before.stdout);
    assert.deepEqual(storeProblems(root), []);
  });

  it('the ollama client pushes and pulls with progress streams', async () => {
    const source = `${registry.address}/library/tiny:v1`;
    const name = `${registry.address}/me/copy:v2`;
    await ollama.copy({ source, destination: name });
    const pushStatuses = [];
    for await (const part of await ollama.push({ model: name, insecure: true, stream: true })) pushStatuses.push(part);
    assert.equal(pushStatuses[0].status, 'retrieving manifest');
    const layerPush = pushStatuses.find((p) => p.status.startsWith('pushing ') && p.digest);
    assert.ok(layerPush, JSON.stringify(pushStatuses));
    assert.equal(layerPush.status, `pushing ${layerPush.digest.slice(7, 19)}`);
    assert.equal(typeof layerPush.total, 'number');
    assert.ok(pushStatuses.some((p) => p.status === 'pushing manifest'));
    assert.equal(pushStatuses.at(-1).status, 'success');

    await ollama.delete({ model: name });
    await ollama.delete({ model: source });
    const pullStatuses = [];
    for await (const part of await ollama.pull({ model: name, insecure: true, stream: true })) pullStatuses.push(part);
    assert.equal(pullStatuses[0].status, 'pulling manifest');
    const manifest = JSON.parse(fs.readFileSync(manifestFile(root, name), 'utf8'));
    const model = manifest.layers.find((l) => l.mediaType === 'application/vnd.ollama.image.model');
    const done = pullStatuses.find((p) => p.digest === model.digest && p.completed === model.size);
    assert.ok(done, JSON.stringify(pullStatuses));
    assert.equal(done.status, `pulling ${model.digest.slice(7, 19)}`);
    assert.equal(done.total, model.size);
    const tail = pullStatuses.slice(-3).map((p) => p.status);
    assert.deepEqual(tail, ['verifying sha256 digest', 'writing manifest', 'success']);
    // stream: false answers once.
    assert.deepEqual(await ollama.pull({ model: name, insecure: true, stream: false }), { status: 'success' });
    assert.ok((await ollama.list()).models.some((m) => m.name === name || m.model === name));
    assert.deepEqual(storeProblems(root), []);
  });

  it('refuses a blob corrupted on the registry and publishes nothing', async () => {
    const name = `${registry.address}/me/copy:v2`;
    const manifest = JSON.parse(fs.readFileSync(manifestFile(root, name), 'utf8'));
    const model = manifest.layers.find((l) => l.mediaType === 'application/vnd.ollama.image.model');
    const data = registry.blobDataPath(model.digest);
    const bytes = fs.readFileSync(data);
    bytes[1000] ^= 0xff;
    fs.writeFileSync(data, bytes);
    await ollama.delete({ model: name });
    await ollama.delete({ model: `${registry.address}/library/tiny:v1` }).catch(() => {});
    assert.equal(fs.existsSync(path.join(root, 'blobs', model.digest.replace(':', '-'))), false);

    await assert.rejects(async () => {
      for await (const part of await ollama.pull({ model: name, insecure: true, stream: true })) void part;
    }, /digest|sha256|corrupt/i);
    const oneShot = await server.request('POST', '/api/pull', { model: name, insecure: true, stream: false });
    assert.equal(oneShot.status, 502);
    assert.match(oneShot.json.error, new RegExp(model.digest.slice(7, 19)));
    const cli = await hearth('pull', '--insecure', name);
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /digest|sha256/i);
    assert.equal(fs.existsSync(manifestFile(root, name)), false);
    assert.equal(fs.existsSync(path.join(root, 'blobs', model.digest.replace(':', '-'))), false);
    assert.deepEqual(storeProblems(root), []);
  });

  it('answers bad requests in ollama\'s error shape', async () => {
    const bad = await server.request('POST', '/api/pull', { model: '../etc/passwd' });
    assert.equal(bad.status, 400);
    assert.equal(typeof bad.json.error, 'string');
    const missing = await server.request('POST', '/api/push', { model: `${registry.address}/me/nothing:v1`, insecure: true, stream: false });
    assert.equal(missing.status, 404);
    assert.match(missing.json.error, /nothing/);
    const notFound = await server.request('POST', '/api/pull', { model: `${registry.address}/me/nothing:v1`, insecure: true, stream: false });
    assert.equal(notFound.status, 404);
    const noName = await server.request('POST', '/api/pull', {});
    assert.equal(noName.status, 400);
    assert.match(noName.json.error, /'model' is required/);
  });
});

describe('hearth create --from registers a GGUF in place', { skip: !stories && 'stories model missing' }, () => {
  let root;
  let open;
  let local;
  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-from-e2e-'));
    const env = { HEARTH_MODELS: root, HEARTH_OLLAMA_MODELS: 'off' };
    local = await startServer({ model: null, args: ['--parallel', '1', '--allow-local-files'], env });
    open = await startServer({ model: null, args: ['--parallel', '1'], env });
  });
  after(async () => {
    await local?.stop();
    await open?.stop();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('links the file instead of copying it, and the model answers', async () => {
    const created = await hearthCli(local, 'create', 'inplace', '--from', stories);
    assert.equal(created.code, 0, created.stderr);
    const manifest = JSON.parse(fs.readFileSync(manifestFile(root, 'registry.ollama.ai/library/inplace:latest'), 'utf8'));
    const weights = manifest.layers.find((l) => l.mediaType === 'application/vnd.ollama.image.model');
    const blob = fs.statSync(path.join(root, 'blobs', weights.digest.replace(':', '-')));
    const source = fs.statSync(stories);
    if (blob.dev === source.dev) assert.equal(blob.ino, source.ino, 'same file system: a hard link, not a copy');
    assert.equal(blob.size, source.size);
    const ran = await hearthCli(local, 'run', 'inplace', 'Once upon a time');
    assert.equal(ran.code, 0, ran.stderr);
    assert.ok(ran.stdout.trim().length > 0);
    assert.deepEqual(storeProblems(root), []);
  });

  it('is refused with a clear message by a server without --allow-local-files', async () => {
    const refused = await hearthCli(open, 'create', 'other', '--from', stories);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /--allow-local-files/);
    const both = await hearthCli(open, 'create', 'other', '--from', stories, '-f', 'Modelfile');
    assert.equal(both.code, 2);
    assert.match(both.stderr, /not both/);
    const missing = await hearthCli(open, 'create', 'other', '--from', path.join(root, 'nothing.gguf'));
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /is not a file/);
  });
});
