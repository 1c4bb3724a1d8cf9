// The chat state the views share: the conversation list (mirrored to IndexedDB), the open
// conversation, and the answers streaming now. Sending adds the user message and an empty
// assistant message, then streams into it; deltas are batched and applied at most every
// FLUSH_MS so a long answer never re-renders per token, and the message (with the stream
// offset its text corresponds to) is saved as it grows, so a reload resumes where it was.
import {
  addMessage,
  currentPath,
  newConversation,
  showBranch,
  titleFrom,
  type Conversation,
  type Message,
} from './conversation';
import { SvelteSet } from 'svelte/reactivity';
import { deleteConversation, loadConversations, saveConversation } from './db';
import { newConversationId, stopAnswer, streamAnswer, type AnswerStats, type ToolCall } from './stream';
import { settings } from './settings.svelte';
import { server } from './server.svelte';

const FLUSH_MS = 50;
const SAVE_MS = 400;

export const chat = $state({
  conversations: [] as Conversation[],
  currentId: null as string | null,
  error: '' as string,
  loaded: false,
});

// Answers streaming now, by assistant message id.
const running = new Map<string, { abort: AbortController; streamId: string }>();
export const streamingIds = new SvelteSet<string>();

export function current(): Conversation | null {
  return chat.conversations.find((c) => c.id === chat.currentId) ?? null;
}

function byId(id: string): Conversation | undefined {
  return chat.conversations.find((c) => c.id === id);
}

async function persist(c: Conversation): Promise<void> {
  try {
    await saveConversation($state.snapshot(c) as Conversation);
  } catch (e) {
    chat.error = `Could not save the conversation in this browser: ${(e as Error).message}`;
  }
}

export async function loadAll(): Promise<void> {
  try {
    chat.conversations = await loadConversations();
  } catch (e) {
    chat.error = `Could not open this browser's conversation store: ${(e as Error).message}`;
  }
  chat.loaded = true;
  // Answers that were streaming when the page went away resume from where they were saved.
  for (const c of chat.conversations) {
    for (const m of Object.values(c.messages)) {
      if (m.status === 'streaming' && m.streamId) void follow(c.id, m.id, true);
    }
  }
}

export function newChat(): Conversation {
  const c = newConversation(settings.systemPrompt);
  chat.conversations.unshift(c);
  chat.currentId = c.id;
  return chat.conversations[0];
}

export function openChat(id: string): void {
  chat.currentId = id;
  chat.error = '';
}

export async function renameChat(id: string, title: string): Promise<void> {
  const c = byId(id);
  if (!c || !title.trim()) return;
  c.title = title.trim();
  await persist(c);
}

export async function removeChat(id: string): Promise<void> {
  const c = byId(id);
  if (c) for (const m of Object.values(c.messages)) if (running.has(m.id)) await stop(m.id);
  chat.conversations = chat.conversations.filter((x) => x.id !== id);
  if (chat.currentId === id) chat.currentId = null;
  await deleteConversation(id);
}

export async function addImported(list: Conversation[]): Promise<void> {
  for (const c of list) {
    chat.conversations.unshift(c);
    await persist(chat.conversations[0]);
  }
}

export async function setSystemPrompt(c: Conversation, text: string): Promise<void> {
  c.systemPrompt = text;
  await persist(c);
}

function requestBody(c: Conversation, upTo: Message): unknown {
  const path = [];
  let id: string | null = upTo.id;
  while (id) {
    path.push(c.messages[id]);
    id = c.messages[id].parent;
  }
  path.reverse();
  const messages: { role: string; content: string }[] = [];
  if (c.systemPrompt.trim()) messages.push({ role: 'system', content: c.systemPrompt });
  for (const m of path) {
    let content = m.content;
    if (m.role === 'assistant') content = content.replace(/<think>[\s\S]*?<\/think>/g, '').trim();
    for (const a of m.attachments ?? []) content += `\n\n--- ${a.name} ---\n${a.text}`;
    messages.push({ role: m.role, content });
  }
  const body: Record<string, unknown> = { messages, stream: true, stream_options: { include_usage: true } };
  if (server.model) body.model = server.model;
  for (const [k, v] of Object.entries(settings.sampling)) if (v !== null) body[k] = v;
  return body;
}

// Streams (or resumes) the answer in assistant message `msgId` of conversation `convId`.
async function follow(convId: string, msgId: string, resume: boolean, body?: unknown): Promise<void> {
  const c = byId(convId);
  const m = c?.messages[msgId];
  if (!c || !m || !m.streamId) return;
  const abort = new AbortController();
  running.set(msgId, { abort, streamId: m.streamId });
  streamingIds.add(msgId);
  let buffered = '';
  let bufferedReasoning = '';
  let tools: ToolCall[] | undefined;
  let offset = m.streamOffset ?? 0;
  let lastFlush = 0;
  let lastSave = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    timer = null;
    lastFlush = performance.now();
    if (buffered) m.content += buffered;
    if (bufferedReasoning) m.reasoning = (m.reasoning ?? '') + bufferedReasoning;
    if (tools) m.toolCalls = tools;
    buffered = bufferedReasoning = '';
    m.streamOffset = offset;
    if (lastFlush - lastSave > SAVE_MS) {
      lastSave = lastFlush;
      void persist(c);
    }
  };
  try {
    await streamAnswer({
      body,
      streamId: m.streamId,
      resumeFrom: resume ? offset : undefined,
      signal: abort.signal,
      cb: {
        onDelta(d, o) {
          if (d.content) buffered += d.content;
          if (d.reasoning) bufferedReasoning += d.reasoning;
          if (d.toolCalls) tools = d.toolCalls;
          offset = o;
          if (performance.now() - lastFlush >= FLUSH_MS) flush();
          else timer ??= setTimeout(flush, FLUSH_MS);
        },
        onStats(s: AnswerStats) {
          m.stats = { ...(m.stats ?? {}), ...Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined)) };
        },
      },
    });
    m.status = 'done';
  } catch (e) {
    if ((e as Error).name === 'AbortError') {
      m.status = 'stopped';
    } else {
      m.status = 'error';
      m.error = (e as Error).message;
    }
  } finally {
    if (timer) clearTimeout(timer);
    flush();
    delete m.streamId;
    running.delete(msgId);
    streamingIds.delete(msgId);
    c.updatedAt = Date.now();
    await persist(c);
  }
}

function startAnswer(c: Conversation, parent: Message): Promise<void> {
  const a = addMessage(c, parent.id, { role: 'assistant', content: '', status: 'streaming' });
  const m = c.messages[a.id];
  m.streamId = newConversationId();
  m.streamOffset = 0;
  if (server.contextSize) m.stats = { contextSize: server.contextSize, model: server.model ?? undefined };
  const body = requestBody(c, parent);
  void persist(c);
  return follow(c.id, m.id, false, body);
}

export async function send(text: string, attachments: { name: string; text: string }[] = []): Promise<void> {
  chat.error = '';
  let c = current() ?? newChat();
  if (!c.roots.length && c.title === 'New chat') c.title = titleFrom(text || attachments[0]?.name || '');
  const u = addMessage(c, c.leaf, { role: 'user', content: text, attachments: attachments.length ? attachments : undefined, status: 'done' });
  await startAnswer(c, c.messages[u.id]);
}

// A new answer to the same user message, as a sibling of `assistantId`.
export async function regenerate(assistantId: string): Promise<void> {
  const c = current();
  const m = c?.messages[assistantId];
  if (!c || !m?.parent) return;
  await startAnswer(c, c.messages[m.parent]);
}

// An edited copy of user message `id` as its sibling, answered anew.
export async function editAndBranch(id: string, text: string): Promise<void> {
  const c = current();
  const old = c?.messages[id];
  if (!c || !old) return;
  const u = addMessage(c, old.parent, { role: 'user', content: text, attachments: old.attachments, status: 'done' });
  await startAnswer(c, c.messages[u.id]);
}

export function switchSibling(id: string): void {
  const c = current();
  if (!c) return;
  showBranch(c, id);
  void persist(c);
}

export async function stop(msgId: string): Promise<void> {
  const r = running.get(msgId);
  if (!r) return;
  r.abort.abort();
  await stopAnswer(r.streamId);
}

export function stopAll(): void {
  for (const id of [...running.keys()]) void stop(id);
}

export function visibleMessages(c: Conversation | null): Message[] {
  return c ? currentPath(c) : [];
}
