// Calls to the hearth server: every request carries the API key from the settings, and every
// failure becomes an ApiError whose message says what went wrong in words a user can act on
// (401: enter or check the key; 404: unknown model; 503: busy, with Retry-After; 507: not enough
// memory, needed vs available; no connection: is it running).
import { settings } from './settings.svelte';

export class ApiError extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
  }
}

export function authHeaders(): Record<string, string> {
  return settings.apiKey ? { Authorization: `Bearer ${settings.apiKey}` } : {};
}

// The server's error text from any of its dialects' shapes.
function errorText(body: unknown): string | null {
  if (!body || typeof body !== 'object') return null;
  const e = (body as { error?: unknown }).error;
  if (typeof e === 'string') return e;
  if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string') return (e as { message: string }).message;
  return null;
}

export async function failure(res: Response): Promise<ApiError> {
  let detail = '';
  try {
    const text = await res.text();
    try {
      detail = errorText(JSON.parse(text)) ?? text;
    } catch {
      detail = text;
    }
  } catch {
    // no body
  }
  detail = detail.slice(0, 300);
  return new ApiError(failureText(res.status, detail || res.statusText, res.headers.get('Retry-After')), res.status);
}

// What a failed request means for the user, and what to do about it.
export function failureText(status: number, detail: string, retryAfter: string | null = null): string {
  detail = detail.trim().replace(/\.$/, '');
  switch (status) {
    case 401:
      return settings.apiKey
        ? 'The server refused the API key (401 unauthorized): check the key in Settings.'
        : 'The server needs an API key: enter it in Settings (401 unauthorized).';
    case 404:
      return `Not found (404): ${detail || 'unknown model or route'}`;
    case 503: {
      const wait = Number(retryAfter);
      const when = Number.isFinite(wait) && wait > 0 ? `The server asks to retry after ${wait} s.` : 'Try again shortly.';
      return `The server is busy (503): ${detail || 'too many requests are waiting'}. ${when}`;
    }
    case 507:
      // The router's text names what the model needs and what is available.
      return `Not enough memory to load the model (507): ${detail}. Unload another model (Models) or pick a smaller one.`;
    default:
      return `Server error ${status}: ${detail}`;
  }
}

// fetch() with the key; a network failure becomes an ApiError with status 0.
export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = { ...authHeaders(), ...((init.headers as Record<string, string>) ?? {}) };
  try {
    return await fetch(path, { ...init, headers });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError('Cannot reach the hearth server: is `hearth serve` still running?', 0);
  }
}

export async function getJson<T>(path: string): Promise<T> {
  const res = await request(path);
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

export async function postJson<T>(path: string, body: unknown, method = 'POST'): Promise<T> {
  const res = await request(path, { method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw await failure(res);
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as T;
}

export interface Props {
  default_generation_settings?: { n_ctx?: number; model?: string; params?: Record<string, number> };
  model_alias?: string;
  build_info?: string;
  hearth_mode?: 'store' | 'single';
}

export interface StoredModel {
  name: string;
  model: string;
  size: number;
  digest: string;
  details?: { parameter_size?: string; quantization_level?: string; family?: string };
}

export interface LoadedModel {
  name: string;
  model: string;
  size?: number;
  size_vram?: number;
  expires_at?: string;
}

export interface OpenAiModel {
  id: string;
}
