// Starts a real `hearth serve` on a free loopback port (port 0: the server picks one and prints
// the address it bound), waits until GET /health says the model is loaded, and stops it again.
// Stopping checks that the server exits cleanly (status 0 after SIGTERM) and that no
// AddressSanitizer / UBSan report appeared on its stderr, so every test file also proves the
// server survived everything the file threw at it.
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { hearthBin } from './paths.mjs';
import { parsePrometheusText } from './prometheus.mjs';

// Sanitizer and crash reports that must never appear on the server's stderr.
const FATAL_PATTERNS = [
  /ERROR: AddressSanitizer/,
  /ERROR: LeakSanitizer/,
  /runtime error:/, // UBSan
  /ThreadSanitizer/,
  /terminate called/,
  /Segmentation fault/,
];

// The address line `hearth serve` prints once bound, e.g. "listening on http://127.0.0.1:39011".
const ADDRESS_RE = /https?:\/\/(127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})/;

function timeoutScale() {
  const s = Number(process.env.HEARTH_E2E_TIMEOUT_SCALE || '1');
  return Number.isFinite(s) && s > 0 ? s : 1;
}

export class HearthServer {
  constructor(proc, { model, args }) {
    this.proc = proc;
    this.model = model;
    this.args = args;
    this.output = '';       // stdout + stderr, interleaved as received
    this.exit = null;       // {code, signal} once it exited
    this.url = null;        // http://127.0.0.1:PORT
    this.port = null;
    this.apiKey = null;
    this.modelName = null;  // the name /v1/models reports
    this.exited = new Promise((resolve) => {
      proc.on('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  // Headers that carry the API key when the server was started with one.
  authHeaders() {
    return this.apiKey ? { Authorization: `Bearer ${this.apiKey}` } : {};
  }

  // fetch() against the server; `path` starts with '/'.
  async fetch(path, init = {}) {
    const headers = { ...this.authHeaders(), ...(init.headers || {}) };
    return fetch(this.url + path, { ...init, headers });
  }

  // GET/POST helpers returning {status, headers, text, json}.
  async request(method, path, body, headers = {}) {
    const init = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      if (!Object.keys(init.headers).some((h) => h.toLowerCase() === 'content-type')) {
        init.headers['Content-Type'] = 'application/json';
      }
    }
    const res = await this.fetch(path, init);
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  async getJson(path) {
    const r = await this.request('GET', path);
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.text}`);
    return r.json;
  }

  async postJson(path, body, headers = {}) {
    const r = await this.request('POST', path, body, headers);
    if (r.status !== 200) throw new Error(`POST ${path}: ${r.status} ${r.text}`);
    return r.json;
  }

  async metricsText() {
    const r = await this.request('GET', '/metrics');
    if (r.status !== 200) throw new Error(`GET /metrics: ${r.status} ${r.text}`);
    return r.text;
  }

  // Throws when the server's output holds a sanitizer report or it died.
  checkHealthy() {
    for (const re of FATAL_PATTERNS) {
      if (re.test(this.output)) {
        throw new Error(`hearth serve reported a fatal error:\n${this.tail(6000)}`);
      }
    }
    if (this.exit) {
      throw new Error(`hearth serve exited unexpectedly (${JSON.stringify(this.exit)}):\n${this.tail(4000)}`);
    }
  }

  tail(n = 3000) {
    return this.output.length > n ? '…' + this.output.slice(-n) : this.output;
  }

  // SIGTERM, then wait for a clean exit (ASan builds take a while to write their leak check).
  async stop() {
    if (!this.exit) {
      this.proc.kill('SIGTERM');
      const timer = sleep(30000 * timeoutScale(), undefined, { ref: false }).then(() => 'timeout');
      const r = await Promise.race([this.exited, timer]);
      if (r === 'timeout') {
        this.proc.kill('SIGKILL');
        await this.exited;
        throw new Error(`hearth serve did not exit within 30 s of SIGTERM:\n${this.tail()}`);
      }
    } else {
      await this.exited;
    }
    for (const re of FATAL_PATTERNS) {
      if (re.test(this.output)) throw new Error(`hearth serve reported a fatal error:\n${this.tail(6000)}`);
    }
    if (this.exit.code !== 0) {
      throw new Error(`hearth serve exited with ${JSON.stringify(this.exit)} after SIGTERM:\n${this.tail()}`);
    }
  }
}

// Starts `hearth serve -m MODEL --host 127.0.0.1 --port 0 ARGS...` (without -m when `model` is
// null: the store mode) and waits until /health answers 200. `env` adds environment variables; `apiKey` is passed as --api-key and used by
// the helpers above. Resolves to a HearthServer.
export async function startServer({ model, args = [], env = {}, apiKey = null, readyTimeoutMs = 60000 }) {
  const bin = hearthBin();
  // model null: store mode (no -m), serving $HEARTH_MODELS.
  const fullArgs = ['serve', ...(model ? ['-m', model] : []), '--host', '127.0.0.1', '--port', '0', ...args];
  if (apiKey) fullArgs.push('--api-key', apiKey);
  const childEnv = { ...process.env, ...env };
  // The tests decide about keys and origins; a developer's shell settings must not leak in.
  if (!('HEARTH_API_KEY' in env)) delete childEnv.HEARTH_API_KEY;
  if (!('HEARTH_ORIGINS' in env)) delete childEnv.HEARTH_ORIGINS;
  const proc = spawn(bin, fullArgs, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  const server = new HearthServer(proc, { model, args: fullArgs });
  server.apiKey = apiKey;

  const addressSeen = new Promise((resolve) => {
    const onData = (chunk) => {
      server.output += chunk.toString();
      const m = ADDRESS_RE.exec(server.output);
      if (m && !server.url) {
        server.port = Number(m[2]);
        server.url = `http://127.0.0.1:${server.port}`;
        resolve();
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
  });
  proc.on('error', (e) => {
    server.output += `\nspawn error: ${e.message}\n`;
  });

  const deadline = Date.now() + readyTimeoutMs * timeoutScale();
  const failed = (why) => {
    proc.kill('SIGKILL');
    return new Error(`hearth serve ${why}\ncommand: ${bin} ${fullArgs.join(' ')}\noutput:\n${server.tail()}`);
  };
  const r = await Promise.race([
    addressSeen.then(() => 'bound'),
    server.exited.then(() => 'exited'),
    sleep(readyTimeoutMs * timeoutScale(), undefined, { ref: false }).then(() => 'timeout'),
  ]);
  if (r !== 'bound') throw failed(r === 'exited' ? 'exited before printing its address' : 'printed no address in time');

  // /health: 503 while loading, 200 when ready.
  for (;;) {
    if (server.exit) throw failed('exited while loading');
    try {
      const res = await fetch(server.url + '/health');
      await res.arrayBuffer();
      if (res.status === 200) break;
      if (res.status !== 503) throw failed(`answered /health with ${res.status}`);
    } catch (e) {
      if (e.message?.startsWith('hearth serve')) throw e;
      // not accepting yet
    }
    if (Date.now() > deadline) throw failed('did not become healthy in time');
    await sleep(20);
  }
  if (model) {
    const models = await server.getJson('/v1/models');
    server.modelName = models.data[0].id;
  }
  return server;
}

// Reads the counters and gauges of /metrics as {name or name{labels}: value}.
export async function metricValues(server) {
  const families = parsePrometheusText(await server.metricsText());
  const out = {};
  for (const f of families.values()) {
    for (const s of f.samples) {
      const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${v}"`).join(',');
      out[labels ? `${s.name}{${labels}}` : s.name] = s.value;
    }
  }
  return out;
}

export { sleep };
