// The model store as the server shows it: /api/tags (stored, with sizes), /api/ps (loaded), each
// model's state in router mode (unloaded, loading with its progress, loaded) from the router's
// status feed GET /models/sse, or from polling GET /models while the feed is not available, and
// the management calls: load (POST /models/load), unload (POST /models/unload), pull with NDJSON
// progress, delete.
import { failure, getJson, postJson, request, type LoadedModel, type StoredModel } from './api';
import { readEvents } from './sse';
import { refreshProps, server } from './server.svelte';

export const models = $state({
  stored: [] as StoredModel[],
  loaded: [] as LoadedModel[],
  busy: '' as string,
  error: '',
  pull: null as null | { name: string; status: string; completed: number; total: number },
  // Router state by model name; absent: the server has no router (single-model mode).
  state: {} as Record<string, ModelState>,
  // How the states arrive: 'feed' (GET /models/sse), 'polling' (GET /models), '' (not watched).
  watch: '' as '' | 'feed' | 'polling',
});

export interface ModelState {
  value: 'loaded' | 'loading' | 'unloaded' | string;
  progress?: number; // 0..1 while loading, when the server reports it
}

const LOAD_POLL_MS = 200; // polling while a load this page started runs, without the feed
const POLL_MS = 2000; // polling without the feed
const FEED_RETRY_MS = 10000; // how long to poll before trying the feed again

// The state of one entry of GET /models. The progress may come as status.progress or as a
// top-level progress, as a fraction (0..1) or a percentage; anything else is ignored.
function stateOf(entry: { status?: unknown; progress?: unknown }): ModelState {
  const st = entry.status;
  const value = typeof st === 'string' ? st : st && typeof st === 'object' && typeof (st as { value?: unknown }).value === 'string' ? (st as { value: string }).value : 'unloaded';
  let p = st && typeof st === 'object' ? (st as { progress?: unknown }).progress : undefined;
  if (p === undefined) p = entry.progress;
  if (p && typeof p === 'object') p = (p as { fraction?: unknown; value?: unknown }).fraction ?? (p as { value?: unknown }).value;
  const out: ModelState = { value };
  if (typeof p === 'number' && Number.isFinite(p) && p >= 0) out.progress = p > 1 ? Math.min(p / 100, 1) : p;
  return out;
}

async function refreshStates(): Promise<void> {
  const list = await getJson<{ data?: { id: string; status?: unknown; progress?: unknown }[] }>('/models');
  const next: Record<string, ModelState> = {};
  for (const m of list.data ?? []) next[m.id] = stateOf(m);
  models.state = next;
}

// Follows the router's status feed until it ends or fails; true if it was open. Each event is
// one model's /models entry; a model the page does not know yet (pulled or created elsewhere)
// or one removed from the store (deleted elsewhere) refreshes the stored list.
async function followFeed(): Promise<boolean> {
  const abort = new AbortController();
  let opened = false;
  try {
    const res = await request('/models/sse', { signal: abort.signal, headers: { Accept: 'text/event-stream' } });
    if (!res.ok || !res.headers.get('Content-Type')?.startsWith('text/event-stream')) return false;
    opened = true;
    models.watch = 'feed';
    await readEvents(res, (name, data) => {
      if (name !== 'model_status') return;
      let entry: { id?: unknown; status?: unknown; progress?: unknown };
      try {
        entry = JSON.parse(data);
      } catch {
        return;
      }
      if (typeof entry.id !== 'string') return;
      models.state = { ...models.state, [entry.id]: stateOf(entry) };
      // A model removed from the store ({"removed": true}) or one the page does not know yet.
      const removed = !!entry.status && typeof entry.status === 'object' && (entry.status as { removed?: unknown }).removed === true;
      if (removed || !models.stored.some((m) => m.name === entry.id)) void refreshModels();
    }, abort.signal);
  } catch {
    // a dropped connection or a server that went away: polled below, then tried again
  } finally {
    abort.abort();
  }
  return opened;
}

// Keeps models.state current in router mode for as long as the page is open: the status feed,
// or, while it fails (a proxy that buffers it, a server without it), polling GET /models.
let watching = false;
export async function watchModels(): Promise<void> {
  if (watching || !server.storeMode) return;
  watching = true;
  for (;;) {
    const wasOpen = await followFeed();
    models.watch = 'polling';
    const until = Date.now() + (wasOpen ? POLL_MS : FEED_RETRY_MS);
    do {
      try {
        await refreshStates();
      } catch {
        // shown by the next action that fails
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    } while (Date.now() < until);
  }
}

export async function refreshModels(): Promise<void> {
  try {
    const [tags, ps] = await Promise.all([
      getJson<{ models: StoredModel[] }>('/api/tags'),
      getJson<{ models: LoadedModel[] }>('/api/ps'),
    ]);
    models.stored = tags.models ?? [];
    models.loaded = ps.models ?? [];
    if (server.storeMode) await refreshStates();
    models.error = '';
    if (server.storeMode && !server.model && models.loaded.length) server.model = models.loaded[0].name;
  } catch (e) {
    models.error = (e as Error).message;
  }
}

export function isLoaded(name: string): boolean {
  const st = models.state[name];
  if (st) return st.value === 'loaded';
  return models.loaded.some((m) => m.name === name || m.model === name);
}

// 'loaded', 'loading' or 'unloaded' (the router's word; /api/ps where there is no router).
export function modelState(name: string): ModelState {
  return models.state[name] ?? { value: isLoaded(name) ? 'loaded' : 'unloaded' };
}

async function busy(label: string, fn: () => Promise<void>): Promise<void> {
  models.busy = label;
  models.error = '';
  let failed = '';
  try {
    await fn();
  } catch (e) {
    failed = (e as Error).message;
  } finally {
    models.busy = '';
    await refreshModels();
    // The refresh clears the error it did not see; the action's own failure stays shown.
    if (failed) models.error = failed;
  }
}

// Loads `name` and makes it the chat's model. The load call returns when the model is ready;
// meanwhile the picker shows the loading state (and progress) from the status feed, or, without
// it, from polling GET /models.
export function useModel(name: string): Promise<void> {
  return busy(`Loading ${name}…`, async () => {
    models.state = { ...models.state, [name]: { value: 'loading' } };
    let loading = true;
    const poll = (async () => {
      while (loading && models.watch !== 'feed') {
        await new Promise((r) => setTimeout(r, LOAD_POLL_MS));
        if (!loading) break;
        try {
          await refreshStates();
          if (loading && models.state[name]?.value !== 'loaded') models.state[name] = { ...models.state[name], value: 'loading' };
        } catch {
          // the load call reports the failure
        }
      }
    })();
    try {
      await postJson('/models/load', { model: name });
    } finally {
      loading = false;
      await poll;
    }
    server.model = name;
    await refreshProps();
  });
}

export function unloadModel(name: string): Promise<void> {
  return busy(`Unloading ${name}…`, async () => {
    await postJson('/models/unload', { model: name });
  });
}

export function deleteModel(name: string): Promise<void> {
  return busy(`Deleting ${name}…`, async () => {
    await postJson('/api/delete', { model: name }, 'DELETE');
    if (server.model === name) server.model = null;
  });
}

// Pulls with ollama's NDJSON progress ({status, digest, total, completed} lines; {error} on failure).
export function pullModel(name: string, insecure: boolean): Promise<void> {
  return busy(`Pulling ${name}…`, async () => {
    models.pull = { name, status: 'starting', completed: 0, total: 0 };
    try {
      const res = await request('/api/pull', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: name, insecure, stream: true }),
      });
      if (!res.ok) throw await failure(res);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let pending = '';
      let sawSuccess = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += value;
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, nl).trim();
          pending = pending.slice(nl + 1);
          if (!line) continue;
          const ev = JSON.parse(line);
          if (ev.error) throw new Error(`Pull failed: ${ev.error}`);
          models.pull.status = ev.status ?? models.pull.status;
          if (typeof ev.total === 'number') models.pull.total = ev.total;
          if (typeof ev.completed === 'number') models.pull.completed = ev.completed;
          if (ev.status === 'success') sawSuccess = true;
        }
      }
      if (!sawSuccess) throw new Error('Pull failed: the server ended the progress stream without "success"');
      models.pull.status = 'success';
    } catch (e) {
      models.pull = null;
      throw e;
    }
  });
}
