// Raw streaming over node:http for the tests that need what SDK clients hide: every byte as it
// arrived and when (inter-token gaps), closing the socket mid-stream (disconnect), headers like
// X-Conversation-Id, and reading a resumed stream byte for byte. Also SSE / NDJSON parsers.
import http from 'node:http';

// Starts a request and returns a handle:
//   status, headers        (after `await handle.response`)
//   chunks: [{at, data}]   every body chunk with its arrival time (performance.now(), ms)
//   bytes()                the body so far as a Buffer
//   done                   a promise resolving when the body ended (or rejecting on error)
//   close()                destroys the socket (the client "goes away")
//   waitFor(pred)          resolves when pred(handle) becomes true (checked after each chunk)
export function openStream(server, path, { method = 'POST', body, headers = {} } = {}) {
  const url = new URL(server.url + path);
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const allHeaders = { ...server.authHeaders(), ...headers };
  if (payload !== undefined) {
    allHeaders['Content-Type'] ??= 'application/json';
    allHeaders['Content-Length'] = Buffer.byteLength(payload);
  }
  const handle = {
    status: undefined,
    headers: undefined,
    chunks: [],
    closedByUs: false,
    waiters: [],
    bytes() {
      return Buffer.concat(this.chunks.map((c) => c.data));
    },
    text() {
      return this.bytes().toString('utf8');
    },
    waitFor(pred) {
      if (pred(this)) return Promise.resolve();
      return new Promise((resolve, reject) => this.waiters.push({ pred, resolve, reject }));
    },
    close() {
      this.closedByUs = true;
      req.destroy();
      for (const w of this.waiters) w.reject(new Error('stream closed by the test'));
      this.waiters = [];
    },
  };
  const req = http.request({
    host: url.hostname,
    port: url.port,
    path: url.pathname + url.search,
    method,
    headers: allHeaders,
    agent: false, // one connection per stream: closing it must not touch others
  });
  handle.response = new Promise((resolve, reject) => {
    req.on('response', (res) => {
      handle.status = res.statusCode;
      handle.headers = res.headers;
      resolve(res);
    });
    req.on('error', (e) => {
      if (!handle.closedByUs) reject(e);
    });
  });
  handle.done = new Promise((resolve, reject) => {
    handle.response.then((res) => {
      res.on('data', (data) => {
        handle.chunks.push({ at: performance.now(), data });
        const still = [];
        for (const w of handle.waiters) {
          if (w.pred(handle)) w.resolve();
          else still.push(w);
        }
        handle.waiters = still;
      });
      res.on('end', () => {
        for (const w of handle.waiters) w.reject(new Error(`stream ended before the awaited condition:\n${handle.text().slice(-2000)}`));
        handle.waiters = [];
        resolve(handle);
      });
      res.on('error', (e) => (handle.closedByUs ? resolve(handle) : reject(e)));
      res.on('aborted', () => (handle.closedByUs ? resolve(handle) : reject(new Error('response aborted'))));
    }, reject);
  });
  handle.done.catch(() => {});
  if (payload !== undefined) req.write(payload);
  req.end();
  return handle;
}

// Splits an SSE body into events [{event, data}] (data: the joined data lines).
export function parseSSE(text) {
  const events = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    if (block.trim() === '') continue;
    let event = 'message';
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    events.push({ event, data: data.join('\n') });
  }
  return events;
}

// The JSON payloads of an OpenAI-style SSE body, without the final [DONE].
export function sseJson(text) {
  return parseSSE(text)
    .filter((e) => e.data !== '[DONE]' && e.data !== '')
    .map((e) => JSON.parse(e.data));
}

export function parseNDJSON(text) {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
}

// The concatenated generated text of an OpenAI chat / completion SSE body.
export function openaiStreamText(text) {
  let out = '';
  for (const chunk of sseJson(text)) {
    for (const c of chunk.choices || []) {
      out += c.delta?.content ?? c.text ?? '';
    }
  }
  return out;
}

// Arrival times (ms) of the chunks that carried generated text, one per SSE event with text.
export function tokenArrivals(handle, extract = (ev) => ev.choices?.[0]?.delta?.content ?? ev.choices?.[0]?.text ?? '') {
  const times = [];
  let buffered = '';
  for (const { at, data } of handle.chunks) {
    buffered += data.toString('utf8');
    const parts = buffered.split('\n\n');
    buffered = parts.pop();
    for (const p of parts) {
      for (const e of parseSSE(p + '\n\n')) {
        if (e.data === '[DONE]' || e.data === '') continue;
        if (extract(JSON.parse(e.data))) times.push(at);
      }
    }
  }
  return times;
}
