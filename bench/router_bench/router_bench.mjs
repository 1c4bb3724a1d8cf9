#!/usr/bin/env node
// Router benchmark (not a test): what the router hop costs. Starts `hearth serve` in router mode
// (a temporary store holding --model) and `hearth serve -m --model` (the model in-process), same
// threads and slots, and measures in the same run, interleaved request by request:
//   - load time: router = first request with an empty prompt (spawns the runner, loads, answers);
//     in-process = process start to /health 200;
//   - per-request latency of a 1-token completion (the hop's added time is the difference of
//     medians), time to first token and decode tokens/s of a streamed completion;
//   - decode tokens/s also as the client sees it (tokens after the first over the time after it);
//   - aggregate tokens/s with --clients streams at once (both servers have that many slots);
//   - the router process's RSS idle (no model) and with the model loaded (the runner apart).
// Records the load average before and after: figures taken with a load average above ~3 (other
// work on the machine) are not overhead figures. Prints and writes JSON. Usage:
//   node bench/router_bench/router_bench.mjs --model FILE.gguf [--threads N] [--runs 30]
//        [--n-predict 64] [--clients 8] [--hearth build/release/src/app/hearth] [--json router_bench.json]
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const model = opt('model', process.env.HEARTH_BENCH_MODEL || path.join(root, '..', 'shared', 'models', 'stories260K-llama-f32.gguf'));
const hearth = opt('hearth', path.join(root, 'build', 'release', 'src', 'app', 'hearth'));
const threads = opt('threads', '2');
const runs = Number(opt('runs', '30'));
const nPredict = Number(opt('n-predict', '64'));
const jsonOut = opt('json', 'router_bench.json');
const clients = Number(opt('clients', '8'));
const loadBefore = os.loadavg()[0];
if (loadBefore >= 3) console.error(`warning: load average ${loadBefore.toFixed(1)}: the machine is busy; overhead figures will be noisy`);
const stem = path.basename(model).replace(/\.gguf$/, '');

function start(argv, env) {
  const t0 = performance.now();
  const proc = spawn(hearth, ['serve', '--port', '0', '--threads', threads, '--parallel', String(clients), ...argv], {
    env: { ...process.env, HEARTH_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[^\s]+)/);
      if (m && !proc.url) {
        proc.url = m[1];
        resolve({ proc, url: m[1], t0 });
      }
    });
    proc.on('exit', () => reject(new Error('hearth serve exited: ' + out)));
  });
}

async function waitHealthy(url) {
  for (;;) {
    try {
      if ((await fetch(url + '/health')).status === 200) return;
    } catch { /* not yet */ }
    await sleep(2);
  }
}

function rssKiB(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(status.match(/VmRSS:\s+(\d+)/)[1]);
}

async function generate(url, name, n, stream) {
  const t0 = performance.now();
  const res = await fetch(url + '/api/generate', {
    method: 'POST',
    body: JSON.stringify({ model: name, prompt: 'Once upon a time', stream, options: { temperature: 0, num_predict: n } }),
  });
  if (!stream) {
    const j = await res.json();
    return { total: performance.now() - t0, tokens: j.eval_count };
  }
  let ttft = null;
  let buf = '';
  let final = null;
  for await (const chunk of res.body) {
    if (ttft === null) ttft = performance.now() - t0;
    buf += Buffer.from(chunk).toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) {
        const j = JSON.parse(line);
        if (j.done) final = j;
      }
    }
  }
  if (buf.trim()) final = JSON.parse(buf);
  if (!final || !final.done) throw new Error('stream ended without a final line: ' + buf);
  const total = performance.now() - t0;
  return { total, ttft, tps: final.eval_count / (final.eval_duration / 1e9), client_tps: (final.eval_count - 1) / ((total - ttft) / 1000),
           tokens: final.eval_count };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const store = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-router-bench-'));
const servers = [];
try {
  const routed = await start([], { HEARTH_MODELS: store, HEARTH_OLLAMA_MODELS: 'off', HEARTH_KEEP_ALIVE: '-1' });
  servers.push(routed.proc);
  await waitHealthy(routed.url);
  await sleep(300);
  const idleRss = rssKiB(routed.proc.pid);
  const bytes = fs.readFileSync(model);
  const digest = 'sha256:' + crypto.createHash('sha256').update(bytes).digest('hex');
  await fetch(`${routed.url}/api/blobs/${digest}`, { method: 'POST', body: bytes });
  await fetch(routed.url + '/api/create', { method: 'POST', body: JSON.stringify({ model: 'bench', files: { 'm.gguf': digest }, stream: false }) });
  const tl = performance.now();
  await fetch(routed.url + '/api/generate', { method: 'POST', body: JSON.stringify({ model: 'bench', prompt: '' }) });
  const routerLoadMs = performance.now() - tl;
  const loadedRss = rssKiB(routed.proc.pid);

  const direct = await start(['-m', model], {});
  servers.push(direct.proc);
  await waitHealthy(direct.url);
  const directLoadMs = performance.now() - direct.t0;

  const lat = { router: [], direct: [] };
  const ttft = { router: [], direct: [] };
  const tps = { router: [], direct: [] };
  const ctps = { router: [], direct: [] };
  for (let i = 0; i < 3; ++i) {  // warm up both
    await generate(routed.url, 'bench', 1, false);
    await generate(direct.url, stem, 1, false);
  }
  for (let i = 0; i < runs; ++i) {
    lat.router.push((await generate(routed.url, 'bench', 1, false)).total);
    lat.direct.push((await generate(direct.url, stem, 1, false)).total);
    const r = await generate(routed.url, 'bench', nPredict, true);
    const d = await generate(direct.url, stem, nPredict, true);
    ttft.router.push(r.ttft); ttft.direct.push(d.ttft);
    tps.router.push(r.tps); tps.direct.push(d.tps);
    ctps.router.push(r.client_tps); ctps.direct.push(d.client_tps);
  }
  // Aggregate: `clients` streams at once, router and in-process alternately.
  const agg = { router: [], direct: [] };
  for (let round = 0; round < 3; ++round) {
    for (const [key, url, name] of [['router', routed.url, 'bench'], ['direct', direct.url, stem]]) {
      const t0 = performance.now();
      const done = await Promise.all(Array.from({ length: clients }, () => generate(url, name, nPredict, true)));
      agg[key].push(done.reduce((n, r) => n + r.tokens, 0) / ((performance.now() - t0) / 1000));
    }
  }
  const result = {
    model: path.basename(model), threads: Number(threads), runs, n_predict: nPredict,
    load_ms: { router: routerLoadMs, in_process: directLoadMs },
    request_ms_p50: { router: median(lat.router), in_process: median(lat.direct), added: median(lat.router) - median(lat.direct) },
    ttft_ms_p50: { router: median(ttft.router), in_process: median(ttft.direct), added: median(ttft.router) - median(ttft.direct) },
    decode_tps_p50: { router: median(tps.router), in_process: median(tps.direct), ratio: median(tps.router) / median(tps.direct) },
    client_decode_tps_p50: { router: median(ctps.router), in_process: median(ctps.direct), ratio: median(ctps.router) / median(ctps.direct) },
    aggregate_tps_p50: { clients, router: median(agg.router), in_process: median(agg.direct), ratio: median(agg.router) / median(agg.direct) },
    load_average: { before: loadBefore, after: os.loadavg()[0] },
    router_rss_kib: { idle: idleRss, with_model_loaded: loadedRss },
  };
  console.log(JSON.stringify(result, null, 2));
  fs.writeFileSync(jsonOut, JSON.stringify(result, null, 2));
} finally {
  for (const p of servers) p.kill('SIGTERM');
  await sleep(300);
  fs.rmSync(store, { recursive: true, force: true });
}
