// The model store as the server shows it: /api/tags (stored), /api/ps (loaded), and the
// management calls: load (ollama: /api/generate with only a model), unload (keep_alive 0),
// pull with NDJSON progress, delete.
import { failure, getJson, postJson, request, type LoadedModel, type StoredModel } from './api';
import { refreshProps, server } from './server.svelte';

export const models = $state({
  stored: [] as StoredModel[],
  loaded: [] as LoadedModel[],
  busy: '' as string,
  error: '',
  pull: null as null | { name: string; status: string; completed: number; total: number },
});

export async function refreshModels(): Promise<void> {
  try {
    const [tags, ps] = await Promise.all([
      getJson<{ models: StoredModel[] }>('/api/tags'),
      getJson<{ models: LoadedModel[] }>('/api/ps'),
    ]);
    models.stored = tags.models ?? [];
    models.loaded = ps.models ?? [];
    models.error = '';
    if (server.storeMode && !server.model && models.loaded.length) server.model = models.loaded[0].name;
  } catch (e) {
    models.error = (e as Error).message;
  }
}

export function isLoaded(name: string): boolean {
  return models.loaded.some((m) => m.name === name || m.model === name);
}

async function busy(label: string, fn: () => Promise<void>): Promise<void> {
  models.busy = label;
  models.error = '';
  try {
    await fn();
  } catch (e) {
    models.error = (e as Error).message;
  } finally {
    models.busy = '';
    await refreshModels();
  }
}

export function useModel(name: string): Promise<void> {
  return busy(`Loading ${name}…`, async () => {
    await postJson('/api/generate', { model: name, stream: false });
    server.model = name;
    await refreshProps();
  });
}

export function unloadModel(name: string): Promise<void> {
  return busy(`Unloading ${name}…`, async () => {
    await postJson('/api/generate', { model: name, keep_alive: 0, stream: false });
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
