// The web UI against a router-mode `hearth serve` (no -m; a store this test fills with `hearth
// create`'s API): the picker switches models, showing each one's load state and the loading
// bar; Unload; loads and unloads made elsewhere show up live (the router's status feed, or
// polling where the feed fails); and the errors a router gives, as the page words them: a runner killed
// mid-answer, 503 queue full (Retry-After), 507 not enough memory (needed vs available), and
// an image attached for a model without vision; and a page opened under a LAN name works.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODELS, modelPath } from '../e2e/lib/paths.mjs';
import { startServer } from '../e2e/lib/server.mjs';
import { axeViolations, chromiumPath, launch, record, screenshot } from './browser.mjs';

const stories = modelPath(MODELS.stories);
const llama = modelPath('random/llama-Q4_0.gguf');
const skip = (!(stories && llama) && 'models missing') || (!chromiumPath() && 'chromium missing');
const WAIT = 60000;
const LAN = 'hearth-box.lan';

const answers = (page) => page.locator('[data-testid=message][data-role=assistant]');

async function send(page, text) {
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill(text);
  await box.press('Enter');
}

async function waitStatus(answer, status) {
  await answer.and(answer.page().locator(`[data-status=${status}]`)).waitFor({ timeout: WAIT });
}

// The pid of the runner process `serverPid` started for model `name`.
function runnerPid(serverPid, name) {
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== serverPid) continue;
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv[1] === 'runner' && argv[argv.indexOf('--alias') + 1] === name) return Number(pid);
    } catch { /* gone meanwhile */ }
  }
  return null;
}

// A store with the given models (name -> GGUF path) and a router server over it.
async function routerWith(models, args = [], env = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-webui-router-'));
  const server = await startServer({
    model: null,
    args: ['--allow-local-files', ...args],
    env: { HEARTH_MODELS: root, HEARTH_OLLAMA_MODELS: 'off', HEARTH_KEEP_ALIVE: '-1', ...env },
  });
  for (const [name, from] of Object.entries(models)) {
    const created = await server.request('POST', '/api/create', { model: name, from, stream: false });
    assert.equal(created.status, 200, created.text);
  }
  return { server, root };
}

describe('web UI: router mode', { skip }, () => {
  let server;
  let root;
  let profile;
  let context;
  let page;
  const bodies = [];

  before(async () => {
    // One slot and a queue of one: a third concurrent answer is refused with 503.
    // LAN: the name a machine on the network would use for this server (mapped to loopback in
    // the browser below), as `--host 0.0.0.0` would answer to its LAN address.
    ({ server, root } = await routerWith({ story: stories, rand: llama }, ['--parallel', '1', '--max-queue', '1'], { HEARTH_ALLOWED_HOSTS: LAN }));
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-webui-profile-'));
    context = await launch(profile);
    page = context.pages()[0] ?? (await context.newPage());
    page.on('request', (r) => {
      if (r.url().endsWith('/v1/chat/completions')) bodies.push(JSON.parse(r.postData()));
    });
  });
  after(async () => {
    await context?.close();
    await server?.stop();
    for (const d of [root, profile]) if (d) fs.rmSync(d, { recursive: true, force: true });
  });

  it('the picker lists the store, switches models showing the load state, and Unload frees one', async () => {
    await page.goto(server.url + '/');
    const picker = page.getByRole('combobox', { name: 'Model' });
    await picker.locator('option[value="rand:latest"]').waitFor({ state: 'attached' });
    assert.deepEqual(await picker.locator('option:not([disabled])').allTextContents(), ['rand:latest', 'story:latest']);
    // Everything the picker shows while models load.
    await page.evaluate(() => {
      window.__seen = [];
      const note = () => {
        const bar = document.querySelector('[data-testid=model-loading]');
        const sel = document.querySelector('[data-testid=model-picker]');
        window.__seen.push({ bar: bar?.getAttribute('aria-label') ?? null, options: [...sel.options].map((o) => o.textContent) });
      };
      new MutationObserver(note).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });

    // Short answers: the random-weights model rarely ends on its own, and a sanitizer build on a
    // loaded CI machine would spend minutes on a whole context of it.
    await page.route('**/v1/chat/completions', (route) =>
      route.continue({ postData: JSON.stringify({ ...JSON.parse(route.request().postData()), max_tokens: 16 }) }));
    for (const name of ['rand:latest', 'story:latest']) {
      const t0 = Date.now();
      await picker.selectOption(name);
      await picker.locator(`option[value="${name}"]`, { hasText: '(loaded)' }).waitFor({ state: 'attached', timeout: WAIT });
      const loadMs = Date.now() - t0;
      assert.equal(await picker.inputValue(), name);
      const seen = await page.evaluate(() => window.__seen.splice(0));
      assert.ok(seen.some((s) => s.bar === `Loading ${name}`), `a loading bar was shown for ${name}`);
      record({ [`router_load_${name.split(':')[0]}`]: { load_ms: loadMs, server_said_loading: seen.some((s) => s.options.some((o) => o.startsWith(`${name} (loading`))) } });
      const ps = await server.getJson('/api/ps');
      assert.ok(ps.models.some((m) => m.name === name), `${name} runs (${JSON.stringify(ps.models.map((m) => m.name))})`);
      await send(page, `Hello ${name}`);
      await waitStatus(answers(page).last(), 'done');
      assert.equal(bodies.at(-1).model, name, 'the chat asks for the picked model');
    }
    await page.unroute('**/v1/chat/completions');
    assert.deepEqual(await axeViolations(page), []);
    await screenshot(page, 'router-picker');

    await page.getByRole('button', { name: 'Models' }).click();
    const dialog = page.getByRole('dialog', { name: 'Models' });
    const row = dialog.locator('[data-testid=model-row][data-name="rand:latest"]');
    await row.getByTestId('loaded').waitFor();
    await row.getByRole('button', { name: 'Unload rand:latest' }).click();
    await row.getByTestId('loaded').waitFor({ state: 'detached', timeout: WAIT });
    const ps = await server.getJson('/api/ps');
    assert.deepEqual(ps.models.map((m) => m.name), ['story:latest']);
    assert.equal((await server.getJson('/models')).data.find((m) => m.id === 'rand:latest').status.value, 'unloaded');
    await dialog.getByRole('button', { name: 'Close' }).click();
    assert.equal(await picker.locator('option[value="rand:latest"]').textContent(), 'rand:latest');
  });

  it('a load, an unload, a copy and a delete made elsewhere show in the picker without a reload: the status feed, else polling', async () => {
    await page.goto(server.url + '/');
    const picker = page.getByRole('combobox', { name: 'Model' });
    const rand = picker.locator('option[value="rand:latest"]');
    await picker.and(page.locator('[data-watch=feed]')).waitFor({ timeout: WAIT });
    assert.equal(await rand.textContent(), 'rand:latest');
    // With the feed open the page does not poll GET /models.
    const polls = [];
    const onRequest = (r) => {
      if (new URL(r.url()).pathname === '/models') polls.push(r.url());
    };
    page.on('request', onRequest);
    const t0 = Date.now();
    const loaded = await server.request('POST', '/models/load', { model: 'rand:latest' });
    assert.equal(loaded.status, 200, loaded.text);
    await rand.filter({ hasText: '(loaded)' }).waitFor({ state: 'attached', timeout: WAIT });
    const shownMs = Date.now() - t0;
    assert.equal((await server.request('POST', '/models/unload', { model: 'rand:latest' })).status, 200);
    await page.waitForFunction(() => document.querySelector('option[value="rand:latest"]').textContent === 'rand:latest', null, { timeout: WAIT });
    page.off('request', onRequest);
    assert.deepEqual(polls, [], 'no polling while the feed is open');
    record({ router_feed: { load_elsewhere_shown_ms: shownMs } });

    // A server or proxy without the feed: the page polls GET /models instead.
    await page.route('**/models/sse', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":"not here"}' }));
    await page.reload();
    await picker.and(page.locator('[data-watch=polling]')).waitFor({ timeout: WAIT });
    assert.equal((await server.request('POST', '/models/load', { model: 'rand:latest' })).status, 200);
    await rand.filter({ hasText: '(loaded)' }).waitFor({ state: 'attached', timeout: WAIT });
    assert.equal((await server.request('POST', '/models/unload', { model: 'rand:latest' })).status, 200);
    await page.waitForFunction(() => document.querySelector('option[value="rand:latest"]').textContent === 'rand:latest', null, { timeout: WAIT });
    await page.unroute('**/models/sse');
    await page.reload();
    await picker.and(page.locator('[data-watch=feed]')).waitFor({ timeout: WAIT });
    // Store changes made elsewhere, with the feed open: a copy shows in the picker, and its
    // delete (a `removed` event) takes it out again.
    const copy = picker.locator('option[value="rand-copy:latest"]');
    assert.equal((await server.request('POST', '/api/copy', { source: 'rand', destination: 'rand-copy' })).status, 200);
    await copy.waitFor({ state: 'attached', timeout: WAIT });
    assert.equal((await server.request('DELETE', '/api/delete', { model: 'rand-copy' })).status, 200);
    await copy.waitFor({ state: 'detached', timeout: WAIT });
  });

  it('a runner killed mid-answer: the page says the answer broke off, keeps the text, and Regenerate works', async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    // A long answer: the tiny model would end its story early without ignore_eos.
    await page.route('**/v1/chat/completions', (route) =>
      route.continue({ postData: JSON.stringify({ ...JSON.parse(route.request().postData()), max_tokens: 4000, ignore_eos: true }) }));
    await send(page, 'Once upon a time');
    const answer = answers(page).last();
    await page.waitForFunction(() => {
      const a = [...document.querySelectorAll('[data-role=assistant]')].at(-1);
      return a?.dataset.status === 'streaming' && a.querySelector('[data-testid=answer]').textContent.length > 20;
    }, null, { timeout: WAIT });
    const pid = runnerPid(server.proc.pid, 'story:latest');
    assert.ok(pid, 'story has a runner');
    process.kill(pid, 'SIGKILL');
    const err = answer.getByTestId('answer-error');
    await err.waitFor({ timeout: WAIT });
    assert.match(await err.textContent(), /^The answer broke off: the runner of model 'story:latest' stopped unexpectedly \(killed by signal 9.*Regenerate to try again\.$/);
    assert.ok((await answer.getByTestId('answer').textContent()).length > 20, 'the text so far stays');
    await screenshot(page, 'runner-crashed');
    await page.unroute('**/v1/chat/completions');
    await answer.getByRole('button', { name: 'Regenerate' }).click();
    await waitStatus(answers(page).last(), 'done');
    assert.notEqual(runnerPid(server.proc.pid, 'story:latest'), pid, 'a new runner answered');
  });

  it('a request past the queue: 503 with its Retry-After, in words', async () => {
    await page.route('**/v1/chat/completions', (route) =>
      route.continue({ postData: JSON.stringify({ ...JSON.parse(route.request().postData()), max_tokens: 4000, ignore_eos: true }) }));
    // One answer streams (the one slot), one waits (the queue of one), the third is refused.
    for (const text of ['First long one', 'Second, waiting']) {
      await page.getByRole('button', { name: 'New chat' }).click();
      await send(page, text);
      await waitStatus(answers(page).last(), 'streaming');
    }
    await page.getByRole('button', { name: 'New chat' }).click();
    await send(page, 'Third, refused');
    const err = answers(page).last().getByTestId('answer-error');
    await err.waitFor({ timeout: WAIT });
    assert.match(await err.textContent(), /^The server is busy \(503\): the queue is full \(1 requests waiting\); try again later\. The server asks to retry after 1 s\.$/);
    await screenshot(page, 'queue-full');
    await page.keyboard.press('Escape'); // stops the two others
    await page.unroute('**/v1/chat/completions');
    await page.getByRole('button', { name: 'First long one', exact: true }).click();
    await waitStatus(answers(page).last(), 'stopped');
  });

  it('an image attached for a model without vision is refused with the reason', async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach text files' }).click();
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    await (await chooser).setFiles({ name: 'cat.png', mimeType: 'image/png', buffer: png });
    const err = page.getByRole('alert').filter({ hasText: 'cat.png' });
    await err.waitFor();
    assert.equal(await err.textContent(), 'cat.png is an image, and story:latest has no vision: Hearth serves no vision models yet, so only text files can be attached.');
    assert.equal(await page.getByRole('list', { name: 'Attached files' }).count(), 0, 'nothing was attached');
  });

  it('a page opened under a LAN name calls its own server without --origins (same-origin is not cross-origin)', async () => {
    const lanProfile = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-webui-profile-'));
    const lan = await launch(lanProfile, [`--host-resolver-rules=MAP ${LAN} 127.0.0.1`]);
    try {
      const p = lan.pages()[0] ?? (await lan.newPage());
      const origin = `http://${LAN}:${server.port}`;
      const posted = p.waitForRequest((r) => r.url().endsWith('/v1/chat/completions'));
      await p.goto(origin + '/');
      const picker = p.getByRole('combobox', { name: 'Model' });
      await picker.locator('option[value="story:latest"]').waitFor({ state: 'attached' });
      await picker.selectOption('story:latest');
      await picker.locator('option[value="story:latest"]', { hasText: '(loaded)' }).waitFor({ state: 'attached', timeout: WAIT });
      await send(p, 'Hello from the LAN');
      assert.equal((await (await posted).allHeaders()).origin, origin, 'the browser named its origin');
      await waitStatus(answers(p).last(), 'done');
      assert.ok((await answers(p).last().getByTestId('answer').textContent()).length > 0);
    } finally {
      await lan.close();
      fs.rmSync(lanProfile, { recursive: true, force: true });
    }
  });

  it('a model that does not fit in memory: 507 with what it needs and what is available', async () => {
    const small = await routerWith({ story: stories }, ['--max-memory', '1MiB']);
    try {
      await page.goto(small.server.url + '/');
      const picker = page.getByRole('combobox', { name: 'Model' });
      await picker.locator('option[value="story:latest"]').waitFor({ state: 'attached' });
      await picker.selectOption('story:latest');
      const err = page.getByTestId('picker-error');
      await err.waitFor({ timeout: WAIT });
      const text = await err.textContent();
      assert.match(text, /^Not enough memory to load the model \(507\): .*'story:latest' needs \d+ MiB but the memory limit \(HEARTH_MAX_MEMORY\) is 1 MiB\. Unload another model \(Models\) or pick a smaller one\.$/, text);
      await screenshot(page, 'not-enough-memory');
    } finally {
      await small.server.stop();
      fs.rmSync(small.root, { recursive: true, force: true });
    }
  });
});
