// A conversation is a tree of messages: editing an earlier message or regenerating an answer
// adds a sibling branch instead of overwriting, and `leaf` says which branch is shown. This
// module holds the tree operations and the JSON export/import format (validated strictly: an
// import that does not match is refused with a message, never half-loaded).
import type { AnswerStats, ToolCall } from './stream';

export type Role = 'user' | 'assistant';
export type MessageStatus = 'done' | 'streaming' | 'stopped' | 'error';

export interface Attachment {
  name: string;
  text: string;
}

export interface Message {
  id: string;
  parent: string | null;
  children: string[];
  role: Role;
  content: string;
  reasoning?: string;
  toolCalls?: ToolCall[];
  attachments?: Attachment[];
  status: MessageStatus;
  error?: string;
  stats?: AnswerStats & { contextSize?: number; model?: string };
  streamId?: string;     // the X-Conversation-Id of the answer while it streams
  streamOffset?: number; // bytes of the stream already applied to `content`
  createdAt: number;
}

export interface Conversation {
  id: string;
  title: string;
  createdAt: number;
  updatedAt: number;
  systemPrompt: string;
  messages: Record<string, Message>;
  roots: string[];
  leaf: string | null;
}

// Random ids from getRandomValues: crypto.randomUUID exists only in secure contexts, and a page
// opened over plain http from another machine (`hearth serve --host 0.0.0.0`) is not one.
export function newId(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export function newConversation(systemPrompt: string): Conversation {
  const now = Date.now();
  return { id: newId(), title: 'New chat', createdAt: now, updatedAt: now, systemPrompt, messages: {}, roots: [], leaf: null };
}

// The messages from the root to the shown leaf.
export function currentPath(c: Conversation): Message[] {
  const out: Message[] = [];
  let id = c.leaf;
  while (id) {
    const m: Message | undefined = c.messages[id];
    if (!m) break;
    out.push(m);
    id = m.parent;
  }
  return out.reverse();
}

export function siblingsOf(c: Conversation, m: Message): string[] {
  return m.parent ? c.messages[m.parent]?.children ?? [m.id] : c.roots;
}

// Adds a message under `parent` (null: a new root) and shows it.
export function addMessage(c: Conversation, parent: string | null, fields: Omit<Message, 'id' | 'parent' | 'children' | 'createdAt'>): Message {
  const m: Message = { ...fields, id: newId(), parent, children: [], createdAt: Date.now() };
  c.messages[m.id] = m;
  if (parent) c.messages[parent].children.push(m.id);
  else c.roots.push(m.id);
  c.leaf = m.id;
  c.updatedAt = Date.now();
  return m;
}

// Shows the branch through `id`: down to its newest descendant.
export function showBranch(c: Conversation, id: string): void {
  let cur = c.messages[id];
  while (cur && cur.children.length) cur = c.messages[cur.children[cur.children.length - 1]];
  c.leaf = cur ? cur.id : id;
}

export function titleFrom(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > 48 ? t.slice(0, 47) + '…' : t || 'New chat';
}

// --- export / import ---

export const EXPORT_FORMAT = 'hearth-conversations';

export function exportJson(conversations: Conversation[]): string {
  return JSON.stringify({ format: EXPORT_FORMAT, version: 1, conversations }, null, 2);
}

function fail(why: string): never {
  throw new Error(`Not a Hearth conversation export: ${why}`);
}

function checkMessage(id: string, m: any, all: Record<string, unknown>): Message {
  if (!m || typeof m !== 'object') fail(`message ${id} is not an object`);
  if (m.id !== id) fail(`message ${id} has a different id`);
  if (m.role !== 'user' && m.role !== 'assistant') fail(`message ${id} has role ${JSON.stringify(m.role)}`);
  if (typeof m.content !== 'string') fail(`message ${id} has no text content`);
  if (m.parent !== null && (typeof m.parent !== 'string' || !(m.parent in all))) fail(`message ${id} has an unknown parent`);
  if (!Array.isArray(m.children) || m.children.some((k: unknown) => typeof k !== 'string' || !(k as string in all))) {
    fail(`message ${id} lists unknown children`);
  }
  const status: MessageStatus = ['done', 'stopped', 'error'].includes(m.status) ? m.status : 'stopped';
  const msg: Message = {
    id,
    parent: m.parent,
    children: [...m.children],
    role: m.role,
    content: m.content,
    status,
    createdAt: typeof m.createdAt === 'number' ? m.createdAt : Date.now(),
  };
  if (typeof m.reasoning === 'string') msg.reasoning = m.reasoning;
  if (typeof m.error === 'string') msg.error = m.error;
  if (Array.isArray(m.attachments)) {
    msg.attachments = m.attachments
      .filter((a: any) => a && typeof a.name === 'string' && typeof a.text === 'string')
      .map((a: any) => ({ name: a.name, text: a.text }));
  }
  if (Array.isArray(m.toolCalls)) {
    msg.toolCalls = m.toolCalls
      .filter((t: any) => t && typeof t.name === 'string' && typeof t.arguments === 'string')
      .map((t: any) => ({ name: t.name, arguments: t.arguments }));
  }
  if (m.stats && typeof m.stats === 'object') {
    const s: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(m.stats)) if (typeof v === 'number' || typeof v === 'string') s[k] = v;
    msg.stats = s as Message['stats'];
  }
  return msg;
}

// Parses an export; throws an Error whose message says what is wrong. Conversations get new
// ids, so importing twice never overwrites.
export function importJson(text: string): Conversation[] {
  let doc: any;
  try {
    doc = JSON.parse(text);
  } catch {
    fail('the file is not JSON');
  }
  if (!doc || doc.format !== EXPORT_FORMAT) fail(`"format" must be "${EXPORT_FORMAT}"`);
  if (doc.version !== 1) fail(`version ${JSON.stringify(doc.version)} is not supported`);
  if (!Array.isArray(doc.conversations)) fail('"conversations" must be a list');
  return doc.conversations.map((c: any, i: number): Conversation => {
    if (!c || typeof c !== 'object') fail(`conversation ${i + 1} is not an object`);
    if (typeof c.title !== 'string') fail(`conversation ${i + 1} has no title`);
    if (!c.messages || typeof c.messages !== 'object' || Array.isArray(c.messages)) fail(`conversation ${i + 1} has no messages`);
    const messages: Record<string, Message> = {};
    for (const [id, m] of Object.entries(c.messages)) messages[id] = checkMessage(id, m, c.messages);
    if (!Array.isArray(c.roots) || c.roots.some((r: unknown) => typeof r !== 'string' || !(r as string in messages))) {
      fail(`conversation ${i + 1} lists unknown roots`);
    }
    if (c.leaf !== null && !(typeof c.leaf === 'string' && c.leaf in messages)) fail(`conversation ${i + 1} shows an unknown message`);
    return {
      id: newId(),
      title: c.title,
      createdAt: typeof c.createdAt === 'number' ? c.createdAt : Date.now(),
      updatedAt: typeof c.updatedAt === 'number' ? c.updatedAt : Date.now(),
      systemPrompt: typeof c.systemPrompt === 'string' ? c.systemPrompt : '',
      messages,
      roots: [...c.roots],
      leaf: c.leaf,
    };
  });
}
