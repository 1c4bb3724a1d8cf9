// Streams one chat answer from /v1/chat/completions (OpenAI SSE) under a conversation id, so
// that a dropped connection or a page reload resumes it with GET /v1/stream/{id}?from=OFFSET.
// `offset` counts the bytes of complete SSE events consumed: a resume from it neither repeats
// nor skips a delta. Deltas go to the caller as they arrive; the final chunk's timings and the
// usage chunk are reported as stats.
import { ApiError, authHeaders, failure, request } from './api';

export interface AnswerStats {
  promptTokens?: number;
  cachedTokens?: number;
  completionTokens?: number;
  tokensPerSecond?: number;
  promptPerSecond?: number;
  finishReason?: string;
}

export interface ToolCall {
  id?: string;
  name: string;
  arguments: string;
}

export interface StreamCallbacks {
  // Called for each complete event with the bytes consumed so far.
  onDelta(delta: { content?: string; reasoning?: string; toolCalls?: ToolCall[] }, offset: number): void;
  onStats(stats: AnswerStats): void;
}

const encoder = new TextEncoder();

// Reads an SSE body from `startOffset`; resolves true when [DONE] (or the end) was seen.
async function consume(res: Response, startOffset: number, cb: StreamCallbacks, signal: AbortSignal): Promise<boolean> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let pending = '';
  let offset = startOffset;
  const toolCalls = new Map<number, ToolCall>();
  try {
    for (;;) {
      if (signal.aborted) throw new DOMException('stopped', 'AbortError');
      const { value, done } = await reader.read();
      if (done) return false;
      pending += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = pending.indexOf('\n\n')) >= 0) {
        const event = pending.slice(0, cut);
        pending = pending.slice(cut + 2);
        offset += encoder.encode(event).length + 2;
        const data = event
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n');
        if (!data) continue;
        if (data === '[DONE]') {
          cb.onDelta({}, offset);
          return true;
        }
        let chunk: any;
        try {
          chunk = JSON.parse(data);
        } catch {
          continue;
        }
        if (chunk.error) {
          // An error event mid-stream: the answer broke off (a runner that crashed, a limit hit).
          const why = String(chunk.error.message ?? JSON.stringify(chunk.error)).replace(/\.\s*$/, '');
          const code = typeof chunk.error.code === 'number' && chunk.error.code > 0 ? chunk.error.code : 500;
          throw new ApiError(`The answer broke off: ${why}. The text so far is kept; Regenerate to try again.`, code);
        }
        const choice = chunk.choices?.[0];
        const delta = choice?.delta ?? {};
        const out: { content?: string; reasoning?: string; toolCalls?: ToolCall[] } = {};
        if (typeof delta.content === 'string' && delta.content) out.content = delta.content;
        const reasoning = delta.reasoning_content ?? delta.reasoning;
        if (typeof reasoning === 'string' && reasoning) out.reasoning = reasoning;
        if (Array.isArray(delta.tool_calls)) {
          for (const t of delta.tool_calls) {
            const i = typeof t.index === 'number' ? t.index : toolCalls.size;
            const cur = toolCalls.get(i) ?? { id: t.id, name: '', arguments: '' };
            if (t.function?.name) cur.name += t.function.name;
            if (t.function?.arguments) cur.arguments += t.function.arguments;
            toolCalls.set(i, cur);
          }
          out.toolCalls = [...toolCalls.values()];
        }
        if (choice?.finish_reason || chunk.timings || chunk.usage) {
          const t = chunk.timings;
          cb.onStats({
            finishReason: choice?.finish_reason ?? undefined,
            promptTokens: chunk.usage?.prompt_tokens ?? (t ? t.prompt_n + t.cache_n : undefined),
            cachedTokens: chunk.usage?.prompt_tokens_details?.cached_tokens ?? t?.cache_n,
            completionTokens: chunk.usage?.completion_tokens ?? t?.predicted_n,
            tokensPerSecond: t?.predicted_per_second,
            promptPerSecond: t?.prompt_per_second,
          });
        }
        cb.onDelta(out, offset);
      }
    }
  } finally {
    reader.releaseLock();
    res.body?.cancel().catch(() => {});
  }
}

export function newConversationId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return 'ui-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// Starts an answer and follows it to its end, resuming after dropped connections (up to
// `retries` times in a row). `resumeFrom` set: the answer was started earlier (a reload), so
// only resume.
export async function streamAnswer(opts: {
  body: unknown;
  streamId: string;
  resumeFrom?: number;
  signal: AbortSignal;
  cb: StreamCallbacks;
  retries?: number;
}): Promise<void> {
  let offset = opts.resumeFrom ?? 0;
  let started = opts.resumeFrom !== undefined;
  const track: StreamCallbacks = {
    onDelta: (d, o) => {
      offset = o;
      opts.cb.onDelta(d, o);
    },
    onStats: opts.cb.onStats,
  };
  let failures = 0;
  for (;;) {
    let res: Response;
    try {
      if (!started) {
        // Not retried: a request that may have reached the server is not sent twice.
        started = true;
        res = await request('/v1/chat/completions', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Conversation-Id': opts.streamId },
          body: JSON.stringify(opts.body),
          signal: opts.signal,
        }).catch((e) => {
          throw e instanceof ApiError ? new ApiError(e.message, -1) : e;
        });
      } else {
        res = await request(`/v1/stream/${encodeURIComponent(opts.streamId)}?from=${offset}`, { signal: opts.signal });
        if (res.status === 404) throw new ApiError('The answer can no longer be resumed: the server forgot it (restarted, or it finished long ago).', 404);
      }
      if (!res.ok) throw await failure(res);
      if (await consume(res, offset, track, opts.signal)) return;
    } catch (e) {
      if ((e as Error).name === 'AbortError') throw e;
      if (e instanceof ApiError && e.status !== 0) throw e; // -1: the first request never got through
      // a dropped connection: resume below
    }
    if (++failures > (opts.retries ?? 5)) throw new ApiError('The connection to the server keeps dropping; the answer is incomplete.', 0);
    await new Promise((r) => setTimeout(r, 300 * failures));
  }
}

// Stops an answer on the server (the fetch is aborted separately).
export async function stopAnswer(streamId: string): Promise<void> {
  try {
    await fetch(`/v1/stream/${encodeURIComponent(streamId)}`, { method: 'DELETE', headers: authHeaders() });
  } catch {
    // the server is gone; nothing to stop
  }
}
