// What the UI knows about the server: /props (context size, model, sampling defaults) and the
// model the chat sends to (store mode: picked from /api/tags).
import { getJson, type Props } from './api';

export const server = $state({
  props: null as Props | null,
  model: null as string | null,
  contextSize: 0,
  storeMode: false,
  error: '',
});

export async function refreshProps(): Promise<void> {
  try {
    const p = await getJson<Props>('/props');
    server.props = p;
    server.storeMode = p.hearth_mode === 'store';
    server.contextSize = p.default_generation_settings?.n_ctx ?? 0;
    if (!server.storeMode) server.model = p.model_alias ?? p.default_generation_settings?.model ?? null;
    server.error = '';
  } catch (e) {
    server.props = null;
    server.error = (e as Error).message;
  }
}

export function serverDefault(key: string): number | undefined {
  const v = server.props?.default_generation_settings?.params?.[key];
  return typeof v === 'number' ? Number(v.toPrecision(6)) : undefined;
}
