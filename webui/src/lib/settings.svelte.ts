// The UI's settings (sampling parameters, API key, theme, system prompt), persisted in
// localStorage under one key. A sampling parameter left null is not sent, so the server's
// default (shown from /props) applies.
export type Theme = 'system' | 'light' | 'dark';

export interface Sampling {
  temperature: number | null;
  top_k: number | null;
  top_p: number | null;
  min_p: number | null;
  repeat_penalty: number | null;
  max_tokens: number | null;
  seed: number | null;
}

export interface Settings {
  apiKey: string;
  theme: Theme;
  systemPrompt: string;
  sampling: Sampling;
}

const STORAGE_KEY = 'hearth.settings.v1';

export const SAMPLING_FIELDS: { key: keyof Sampling; label: string; step: number; min: number; max?: number }[] = [
  { key: 'temperature', label: 'Temperature', step: 0.05, min: 0, max: 5 },
  { key: 'top_k', label: 'Top-k', step: 1, min: 0 },
  { key: 'top_p', label: 'Top-p', step: 0.01, min: 0, max: 1 },
  { key: 'min_p', label: 'Min-p', step: 0.01, min: 0, max: 1 },
  { key: 'repeat_penalty', label: 'Repeat penalty', step: 0.05, min: 0 },
  { key: 'max_tokens', label: 'Max tokens', step: 1, min: 1 },
  { key: 'seed', label: 'Seed', step: 1, min: 0 },
];

function defaults(): Settings {
  return {
    apiKey: '',
    theme: 'system',
    systemPrompt: '',
    sampling: { temperature: null, top_k: null, top_p: null, min_p: null, repeat_penalty: null, max_tokens: null, seed: null },
  };
}

function load(): Settings {
  const base = defaults();
  try {
    const raw = localStorage.getItem(STORAGE_KEY);
    if (!raw) return base;
    const saved = JSON.parse(raw);
    if (typeof saved.apiKey === 'string') base.apiKey = saved.apiKey;
    if (['system', 'light', 'dark'].includes(saved.theme)) base.theme = saved.theme;
    if (typeof saved.systemPrompt === 'string') base.systemPrompt = saved.systemPrompt;
    for (const f of SAMPLING_FIELDS) {
      const v = saved.sampling?.[f.key];
      if (typeof v === 'number' && Number.isFinite(v)) base.sampling[f.key] = v;
    }
  } catch {
    // unreadable settings: start from the defaults
  }
  return base;
}

export const settings: Settings = $state(load());

export function saveSettings(): void {
  localStorage.setItem(STORAGE_KEY, JSON.stringify($state.snapshot(settings)));
}

export function applyTheme(theme: Theme): void {
  const dark = theme === 'dark' || (theme === 'system' && matchMedia('(prefers-color-scheme: dark)').matches);
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}
