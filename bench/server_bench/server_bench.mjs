#!/usr/bin/env node
// Server benchmark (not a test): aggregate generated tokens/s and time-to-first-token p50/p99
// of `hearth serve` with 1, 4 and 8 concurrent streaming clients, next to llama-server started
// in the same run on the same model file, thread count and slot count (-np = clients) when
// HEARTH_LLAMA_SERVER names a llama-server binary; and the single-stream HTTP overhead of
// `hearth serve` against `hearth generate` (decode tokens/s). Prints a table with the ratios and
// writes JSON.
//
// A node driver rather than C++: the clients only open streams and timestamp SSE events, which
// costs the driver microseconds per token next to a model step's milliseconds; node's http and
// event loop give 8 concurrent streams in one thread with no extra dependency (built-ins only,
// no npm install); and both servers are driven through the same OpenAI /v1/completions
// streaming request, so the comparison is like for like.
//
// Usage: node bench/server_bench/server_bench.mjs --model FILE.gguf [--threads N]
//        [--clients 1,4,8] [--n-predict 128] [--prompt-words 48] [--requests 2] [--ctx-per-slot 512]
//        [--hearth build/release/src/app/hearth] [--json server_bench.json] [--overhead-runs 3]
//        [--rounds 1]   (rounds > 1 alternate hearth / llama-server at each level: A B A B ...,
//                        reporting the median throughput and TTFT percentiles over all requests)
// Env: HEARTH_LLAMA_SERVER=/path/to/llama-server (optional baseline), HEARTH_BENCH_MODEL.
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function parseArgs(argv) {
  const o = {
    model: process.env.HEARTH_BENCH_MODEL || '',
    threads: os.availableParallelism ? os.availableParallelism() : os.cpus().length,
    clients: [1, 4, 8],
    nPredict: 128,
    promptWords: 48,
    requests: 2,
    ctxPerSlot: 512,
    hearth: path.join(root, 'build', 'release', 'src', 'app', 'hearth'),
    json: 'server_bench.json',
    overheadRuns: 3,
    rounds: 1,
    llamaServer: process.env.HEARTH_LLAMA_SERVER || '',
  };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--model' || a === '-m') o.model = v();
    else if (a === '--threads' || a === '-t') o.threads = Number(v());
    else if (a === '--clients') o.clients = v().split(',').map(Number);
    else if (a === '--n-predict' || a === '-n') o.nPredict = Number(v());
    else if (a === '--prompt-words') o.promptWords = Number(v());
    else if (a === '--requests') o.requests = Number(v());
    else if (a === '--ctx-per-slot') o.ctxPerSlot = Number(v());
    else if (a === '--hearth') o.hearth = v();
    else if (a === '--llama-server') o.llamaServer = v();
    else if (a === '--json') o.json = v();
    else if (a === '--overhead-runs') o.overheadRuns = Number(v());
    else if (a === '--rounds') o.rounds = Number(v());
    else if (a === '--help' || a === '-h') {
      console.log(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').filter((l) => l.startsWith('//')).join('\n'));
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!o.model) throw new Error('--model FILE.gguf (or HEARTH_BENCH_MODEL) is required');
  if (!fs.existsSync(o.model)) throw new Error(`model ${o.model} not found`);
  if (!fs.existsSync(o.hearth)) throw new Error(`hearth binary ${o.hearth} not found (scripts/build.sh release --target hearth)`);
  if (o.llamaServer && !fs.existsSync(o.llamaServer)) throw new Error(`llama-server ${o.llamaServer} not found`);
  return o;
}

// ---------------------------------------------------------------- prompts
// Distinct prompts of ordinary words (a fixed pseudo-random sequence), so neither server gets
// a prefix-cache advantage across requests and both tokenize the same text.
const WORDS = ('the a little girl boy dog cat sun tree house river went saw found played ran happy sad big small red ' +
  'blue green day night mother father friend park ball bird fish garden school book car road window door ' +
  'happy quickly slowly jumped looked smiled said asked wanted loved water flower sky cloud rain snow').split(' ');
function makePrompts(count, words) {
  let s = 0x9e3779b9;
  const rnd = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  const out = [];
  for (let i = 0; i < count; i++) {
    const w = [`Story ${i}:`];
    for (let k = 0; k < words; k++) w.push(WORDS[Math.floor(rnd() * WORDS.length)]);
    out.push(w.join(' '));
  }
  return out;
}

// ---------------------------------------------------------------- servers
async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function startProcess(label, bin, args) {
  const port = await freePort();
  const full = [...args, '--host', '127.0.0.1', '--port', String(port)];
  const proc = spawn(bin, full, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HEARTH_LOG_LEVEL: 'warn' } });
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output += d));
  let exited = null;
  proc.on('exit', (code, signal) => (exited = { code, signal }));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 300000;
  for (;;) {
    if (exited) throw new Error(`${label} exited (${JSON.stringify(exited)}): ${bin} ${full.join(' ')}\n${output.slice(-3000)}`);
    try {
      const r = await fetch(url + '/health');
      await r.arrayBuffer();
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${label} not healthy in time:\n${output.slice(-3000)}`);
    }
    await sleep(100);
  }
  return {
    label,
    url,
    async stop() {
      if (exited) return;
      const done = new Promise((r) => proc.on('exit', r));
      proc.kill('SIGTERM');
      const t = sleep(20000, 'timeout', { ref: false });
      if ((await Promise.race([done, t])) === 'timeout') proc.kill('SIGKILL');
    },
  };
}

function startHearth(o, slots) {
  return startProcess('hearth', o.hearth, ['serve', '-m', o.model, '-t', String(o.threads), '--parallel', String(slots),
    '--ctx-size', String(o.ctxPerSlot * slots)]);
}

function startLlama(o, slots) {
  return startProcess('llama-server', o.llamaServer, ['-m', o.model, '-t', String(o.threads), '-tb', String(o.threads),
    '-np', String(slots), '-c', String(o.ctxPerSlot * slots), '--no-webui']);
}

// ---------------------------------------------------------------- one streaming request
// Sends one greedy /v1/completions stream; resolves {ttft, tokens, start, first, last, end}
// with times in ms (performance.now()).
function streamCompletion(url, prompt, nPredict) {
  const body = JSON.stringify({
    prompt,
    max_tokens: nPredict,
    n_predict: nPredict,
    temperature: 0,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  });
  const u = new URL(url + '/v1/completions');
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let first = null;
    let last = null;
    let events = 0;
    let usageTokens = null;
    let buffered = '';
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false,
        headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
      (res) => {
        if (res.statusCode !== 200) {
          let t = '';
          res.on('data', (d) => (t += d));
          res.on('end', () => reject(new Error(`${url}: HTTP ${res.statusCode} ${t.slice(0, 500)}`)));
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (d) => {
          const now = performance.now();
          buffered += d;
          let cut;
          while ((cut = buffered.indexOf('\n\n')) >= 0) {
            const block = buffered.slice(0, cut);
            buffered = buffered.slice(cut + 2);
            for (const line of block.split('\n')) {
              if (!line.startsWith('data:')) continue;
              const data = line.slice(5).trim();
              if (data === '[DONE]' || data === '') continue;
              const ev = JSON.parse(data);
              if (ev.usage?.completion_tokens) usageTokens = ev.usage.completion_tokens;
              const text = ev.choices?.[0]?.text ?? ev.content ?? '';
              if (ev.choices?.length || ev.content !== undefined) {
                if (text !== '' || ev.choices?.[0]?.finish_reason == null) {
                  events += 1;
                  if (first === null) first = now;
                  last = now;
                }
              }
            }
          }
        });
        res.on('end', () => {
          const end = performance.now();
          resolve({ ttft: (first ?? end) - start, tokens: usageTokens ?? events, events, start, first: first ?? end, last: last ?? end, end });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

// ---------------------------------------------------------------- measurements
function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const idx = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[idx];
}

async function runClients(server, clients, o, prompts) {
  // Warm-up: one short request (page in the weights, first allocations).
  await streamCompletion(server.url, 'Warm up the model.', 8);
  const results = [];
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let r = 0; r < o.requests; r++) {
        const prompt = prompts[next++ % prompts.length];
        results.push(await streamCompletion(server.url, prompt, o.nPredict));
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const tokens = results.reduce((a, r) => a + r.tokens, 0);
  return {
    requests: results.length,
    tokens,
    wall_s: wall,
    tokens_per_s: tokens / wall,
    ttfts: results.map((r) => r.ttft),
    short_requests: results.filter((r) => r.tokens < o.nPredict).length,
  };
}

// Median throughput over rounds; TTFT percentiles over every request of every round.
function summarize(rounds) {
  const ttfts = rounds.flatMap((r) => r.ttfts);
  return {
    tokens_per_s: percentile(rounds.map((r) => r.tokens_per_s), 50),
    ttft_p50_ms: percentile(ttfts, 50),
    ttft_p99_ms: percentile(ttfts, 99),
    requests: ttfts.length,
    short_requests: rounds.reduce((a, r) => a + r.short_requests, 0),
    rounds: rounds.map(({ ttfts: _t, ...rest }) => rest),
  };
}

const run = promisify(execFile);

// Decode tokens/s of `hearth generate` vs one stream through `hearth serve`, interleaved.
async function httpOverhead(o, prompt) {
  const server = await startHearth(o, 1);
  const cli = [];
  const httpRates = [];
  try {
    await streamCompletion(server.url, 'Warm up the model.', 8);
    for (let i = 0; i < o.overheadRuns; i++) {
      const { stdout } = await run(o.hearth, ['generate', '-m', o.model, '-t', String(o.threads), '-c', String(o.ctxPerSlot),
        '-n', String(o.nPredict), '--temp', '0', '--ignore-eos', '--json', '-p', prompt], { maxBuffer: 16 << 20 });
      const j = JSON.parse(stdout);
      cli.push(j.timings.predicted_n / (j.timings.predicted_ms / 1000));
      const r = await streamCompletion(server.url, prompt, o.nPredict);
      httpRates.push((r.events - 1) / ((r.last - r.first) / 1000));
    }
  } finally {
    await server.stop();
  }
  const cliMed = percentile(cli, 50);
  const httpMed = percentile(httpRates, 50);
  return { cli_tokens_per_s: cliMed, http_tokens_per_s: httpMed, overhead: 1 - httpMed / cliMed, cli_runs: cli, http_runs: httpRates };
}

async function main() {
  const o = parseArgs(process.argv);
  const prompts = makePrompts(64, o.promptWords);
  const report = {
    model: o.model,
    model_bytes: fs.statSync(o.model).size,
    threads: o.threads,
    rounds: o.rounds,
    n_predict: o.nPredict,
    prompt_words: o.promptWords,
    requests_per_client: o.requests,
    ctx_per_slot: o.ctxPerSlot,
    cpu: os.cpus()[0]?.model,
    llama_server: o.llamaServer || null,
    levels: [],
  };
  console.log(`model ${path.basename(o.model)} (${(report.model_bytes / 2 ** 20).toFixed(0)} MiB), ${o.threads} threads, ` +
    `${o.nPredict} tokens per request, ${o.requests} requests per client` + (o.llamaServer ? ', llama-server baseline' : ', no llama-server (HEARTH_LLAMA_SERVER unset)'));

  for (const clients of o.clients) {
    const level = { clients };
    // The two servers one after another at each level, on the same prompts, alternating over
    // rounds so that load from elsewhere on the machine falls on both.
    const hearthRounds = [];
    const llamaRounds = [];
    for (let round = 0; round < o.rounds; round++) {
      const h = await startHearth(o, clients);
      try {
        hearthRounds.push(await runClients(h, clients, o, prompts));
      } finally {
        await h.stop();
      }
      if (o.llamaServer) {
        const l = await startLlama(o, clients);
        try {
          llamaRounds.push(await runClients(l, clients, o, prompts));
        } finally {
          await l.stop();
        }
      }
    }
    level.hearth = summarize(hearthRounds);
    if (o.llamaServer) {
      level.llama_server = summarize(llamaRounds);
      level.throughput_ratio = level.hearth.tokens_per_s / level.llama_server.tokens_per_s;
      level.ttft_p50_ratio = level.hearth.ttft_p50_ms / level.llama_server.ttft_p50_ms;
    }
    report.levels.push(level);
    const f = (x) => x.toFixed(1);
    let line = `clients ${String(clients).padStart(2)} | hearth ${f(level.hearth.tokens_per_s).padStart(7)} tok/s, TTFT p50 ${f(level.hearth.ttft_p50_ms)} ms p99 ${f(level.hearth.ttft_p99_ms)} ms`;
    if (level.llama_server) {
      line += ` | llama-server ${f(level.llama_server.tokens_per_s).padStart(7)} tok/s, TTFT p50 ${f(level.llama_server.ttft_p50_ms)} ms p99 ${f(level.llama_server.ttft_p99_ms)} ms` +
        ` | ratio ${level.throughput_ratio.toFixed(2)}x`;
    }
    console.log(line);
  }

  if (o.overheadRuns > 0) {
    report.single_stream = await httpOverhead(o, prompts[0]);
    const s = report.single_stream;
    console.log(`single stream: hearth generate ${s.cli_tokens_per_s.toFixed(1)} tok/s, hearth serve ${s.http_tokens_per_s.toFixed(1)} tok/s ` +
      `(HTTP overhead ${(s.overhead * 100).toFixed(1)}%, target <= 5%)`);
  }
  const at8 = report.levels.find((l) => l.clients === 8);
  if (at8?.throughput_ratio !== undefined) {
    console.log(`aggregate throughput at 8 clients: ${at8.throughput_ratio.toFixed(2)}x llama-server (target >= 1.2x)`);
  }
  fs.writeFileSync(o.json, JSON.stringify(report, null, 2) + '\n');
  console.log(`wrote ${o.json}`);
}

main().catch((e) => {
  console.error(`server_bench: ${e.message}`);
  process.exit(1);
});
