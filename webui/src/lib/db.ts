// Conversations in IndexedDB (database "hearth", store "conversations", one record per
// conversation keyed by id), so they survive reloads and browser restarts.
import type { Conversation } from './conversation';

const DB_NAME = 'hearth';
const STORE = 'conversations';

let dbPromise: Promise<IDBDatabase> | null = null;

function open(): Promise<IDBDatabase> {
  dbPromise ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: 'id' });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  return dbPromise;
}

function run<T>(mode: IDBTransactionMode, fn: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  return open().then(
    (db) =>
      new Promise<T>((resolve, reject) => {
        const tx = db.transaction(STORE, mode);
        const req = fn(tx.objectStore(STORE));
        tx.oncomplete = () => resolve(req.result);
        tx.onerror = () => reject(tx.error);
        tx.onabort = () => reject(tx.error);
      }),
  );
}

export async function loadConversations(): Promise<Conversation[]> {
  const all = await run<Conversation[]>('readonly', (s) => s.getAll() as IDBRequest<Conversation[]>);
  return all.sort((a, b) => b.updatedAt - a.updatedAt);
}

export function saveConversation(c: Conversation): Promise<unknown> {
  return run('readwrite', (s) => s.put(c));
}

export function deleteConversation(id: string): Promise<unknown> {
  return run('readwrite', (s) => s.delete(id));
}
