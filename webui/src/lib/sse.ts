// Reads a text/event-stream response body as events (name, data), until the body ends or the
// signal aborts. Comment lines (": keep-alive") and events without data are skipped.
export async function readEvents(res: Response, onEvent: (name: string, data: string) => void, signal: AbortSignal): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const stop = () => void reader.cancel().catch(() => {});
  signal.addEventListener('abort', stop);
  let pending = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      pending += value.replace(/\r\n?/g, '\n');
      let cut: number;
      while ((cut = pending.indexOf('\n\n')) >= 0) {
        const block = pending.slice(0, cut);
        pending = pending.slice(cut + 2);
        let name = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) name = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (data.length) onEvent(name, data.join('\n'));
      }
    }
  } finally {
    signal.removeEventListener('abort', stop);
  }
}
