// The web UI in a real chromium against a real `hearth serve -m stories260K`: first load
// (size, time, accessibility), an answer streams and renders, stop, regenerate, edit and
// branch, reload mid-answer resumes the same stream to its end, conversations and settings
// survive a browser restart, imports are validated and model text cannot run script, and a
// server that went away is reported in the page.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODELS, modelPath } from '../e2e/lib/paths.mjs';
import { startServer } from '../e2e/lib/server.mjs';
import { axeViolations, chromiumPath, judgeLongTasks, launch, record, screenshot, streamText, throttle, traceMainThread } from './browser.mjs';

const stories = modelPath(MODELS.stories);
const skip = (!stories && 'stories model missing') || (!chromiumPath() && 'chromium missing');
const SLOW = 2500; // bytes/s: about 10 SSE events a second, so an answer is still streaming when we act
const WAIT = 60000;
// 4,000 tokens take about 6 s on a quiet machine (release build); CI machines are shared and
// sanitizer builds slower (HEARTH_E2E_TIMEOUT_SCALE).
const LONG_WAIT = 180000 * Number(process.env.HEARTH_E2E_TIMEOUT_SCALE || 1);

const answers = (page) => page.locator('[data-testid=message][data-role=assistant]');
const users = (page) => page.locator('[data-testid=message][data-role=user]');

// The stored conversations, as the page keeps them in IndexedDB.
function storedConversations(page) {
  return page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const req = indexedDB.open('hearth', 1);
        req.onsuccess = () => {
          const all = req.result.transaction('conversations').objectStore('conversations').getAll();
          all.onsuccess = () => resolve(all.result);
          all.onerror = () => reject(all.error);
        };
        req.onerror = () => reject(req.error);
      }),
  );
}

async function send(page, text) {
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill(text);
  await box.press('Enter');
}

async function waitDone(locator, timeout = WAIT) {
  await locator.and(locator.page().locator('[data-status=done]')).waitFor({ timeout });
}

describe('web UI: chat', { skip }, () => {
  let server;
  let profile;
  let context;
  let page;
  const streamIds = [];

  async function open() {
    context = await launch(profile);
    page = context.pages()[0] ?? (await context.newPage());
    page.on('request', (r) => {
      if (r.url().endsWith('/v1/chat/completions')) streamIds.push(r.headers()['x-conversation-id']);
    });
  }

  before(async () => {
    // 4096 tokens per slot: room for the 4,000-token answer below. One thread: the model's
    // decoding leaves the other core to the browser, whose long tasks are measured.
    server = await startServer({ model: stories, args: ['--parallel', '2', '--ctx-size', '8192', '--threads', '1'] });
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-webui-profile-'));
    await open();
  });
  after(async () => {
    await context?.close();
    await server?.stop();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  it('loads within budget, offline-safe and without serious accessibility violations', async () => {
    const t0 = Date.now();
    await page.goto(server.url + '/');
    await page.getByRole('textbox', { name: 'Message' }).waitFor();
    const wall = Date.now() - t0;
    const nav = await page.evaluate(() => {
      const n = performance.getEntriesByType('navigation')[0];
      const res = performance.getEntriesByType('resource');
      return {
        load_ms: n.loadEventEnd - n.startTime,
        dom_content_loaded_ms: n.domContentLoadedEventEnd - n.startTime,
        transfer_bytes: n.transferSize + res.reduce((s, r) => s + r.transferSize, 0),
        decoded_bytes: n.decodedBodySize + res.reduce((s, r) => s + r.decodedBodySize, 0),
        external: res.map((r) => r.name).filter((u) => !u.startsWith(location.origin)),
      };
    });
    record({ first_load: { ...nav, until_interactive_ms: wall } });
    assert.deepEqual(nav.external, [], 'the page loads nothing from outside the server');
    assert.ok(nav.transfer_bytes < 300 * 1024, `first load transferred ${nav.transfer_bytes} bytes (budget 300 KB)`);
    assert.deepEqual(await axeViolations(page), []);
    await screenshot(page, 'empty');
  });

  it('settings: max tokens and theme persist and reach the request', async () => {
    await page.getByRole('button', { name: 'Settings' }).click();
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    await dialog.getByTestId('sampling-max_tokens').fill('120');
    await dialog.getByTestId('sampling-max_tokens').press('Tab');
    assert.equal(await dialog.getByTestId('sampling-temperature').getAttribute('placeholder'), '0.8', 'the server default from /props');
    await dialog.getByLabel('dark').check();
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    assert.deepEqual(await axeViolations(page), []);
    await screenshot(page, 'settings');
    await dialog.getByRole('button', { name: 'Close' }).click();
    // Shift+Enter is a new line, not a send.
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('first line');
    await box.press('Shift+Enter');
    await box.pressSequentially('second');
    assert.equal(await box.inputValue(), 'first line\nsecond');
    assert.equal(await users(page).count(), 0);
    await box.fill('');
  });

  it('streams an answer, shows its numbers, and the text is the stream the server sent', async () => {
    const bodies = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/v1/chat/completions')) bodies.push(JSON.parse(r.postData()));
    });
    // Long tasks (main thread busy > 50 ms) while the answer streams and renders.
    await page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((list) => window.__longTasks.push(...list.getEntries().map((e) => e.duration))).observe({ type: 'longtask' });
    });
    await send(page, 'Once upon a time');
    const answer = answers(page).last();
    await waitDone(answer);
    const longTasks = await page.evaluate(() => window.__longTasks);
    assert.equal(bodies[0].max_tokens, 120);
    assert.equal(bodies[0].stream, true);
    const stats = await answer.getByTestId('stats').textContent();
    assert.match(stats, /tok\/s/);
    assert.match(stats, /prompt \d+/);
    assert.match(stats, /context \d+\/4096 \(\d+%\)/, stats); // --ctx-size 8192 over 2 slots
    const [conv] = await storedConversations(page);
    const stored = Object.values(conv.messages).find((m) => m.role === 'assistant');
    assert.ok(stored.content.length > 0);
    assert.equal(stored.content, await streamText(server, streamIds.at(-1)));
    // Reported, not asserted: on a loaded CI machine the browser's own scheduling varies.
    record({ streaming: { answer_tokens: stored.stats?.completionTokens, long_tasks: longTasks.length, longest_task_ms: Math.max(0, ...longTasks) } });
    assert.equal(conv.title, 'Once upon a time');
    await screenshot(page, 'answered');
  });

  it('stops an answer mid-way (Esc)', async () => {
    const cdp = await throttle(page, SLOW);
    await send(page, 'The little dog');
    const answer = answers(page).last();
    await answer.and(page.locator('[data-status=streaming]')).waitFor();
    await page.waitForFunction(() => {
      const a = [...document.querySelectorAll('[data-role=assistant]')].at(-1);
      return a && a.querySelector('[data-testid=answer]').textContent.length > 3;
    }, null, { timeout: WAIT });
    await page.keyboard.press('Escape');
    await answer.and(page.locator('[data-status=stopped]')).waitFor({ timeout: WAIT });
    const shown = await answer.getByTestId('answer').textContent();
    await page.waitForTimeout(500);
    assert.equal(await answer.getByTestId('answer').textContent(), shown, 'nothing arrives after stop');
    await answer.getByTestId('stopped').waitFor();
    await cdp.detach();
    await throttle(page, 0);
  });

  it('regenerates an answer as a sibling branch', async () => {
    const answer = answers(page).last();
    await answer.getByRole('button', { name: 'Regenerate' }).click();
    await waitDone(answers(page).last());
    assert.equal(await answers(page).last().getByTestId('branch-pos').textContent(), '2/2');
    await answers(page).last().getByRole('button', { name: 'Previous branch' }).click();
    assert.equal(await answers(page).last().getByTestId('branch-pos').textContent(), '1/2');
    await answers(page).last().getByTestId('stopped').waitFor();
  });

  it('edits an earlier message into a new branch and switches between branches', async () => {
    const first = users(page).first();
    await first.getByRole('button', { name: 'Edit' }).click();
    const box = first.getByRole('textbox', { name: 'Edit message' });
    await box.fill('A girl named Lily');
    await box.press('Enter');
    await waitDone(answers(page).last());
    assert.equal(await users(page).count(), 1, 'the edited branch holds only the new exchange');
    assert.equal(await users(page).first().getByTestId('user-text').textContent(), 'A girl named Lily');
    assert.equal(await users(page).first().getByTestId('branch-pos').textContent(), '2/2');
    await users(page).first().getByRole('button', { name: 'Previous branch' }).click();
    assert.equal(await users(page).first().getByTestId('user-text').textContent(), 'Once upon a time');
    assert.equal(await users(page).count(), 2, 'the old branch comes back whole');
    await screenshot(page, 'branches');
  });

  it('resumes an answer after a reload mid-stream, to the same end', async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    await throttle(page, SLOW);
    await send(page, 'One day');
    await page.waitForFunction(() => {
      const a = [...document.querySelectorAll('[data-role=assistant]')].at(-1);
      return a && a.dataset.status === 'streaming' && a.querySelector('[data-testid=answer]').textContent.length > 3;
    }, null, { timeout: WAIT });
    const id = streamIds.at(-1);
    // Wait until the partial answer was saved, then reload.
    await page.waitForFunction(async (sid) => {
      const convs = await new Promise((resolve) => {
        const req = indexedDB.open('hearth', 1);
        req.onsuccess = () => {
          const all = req.result.transaction('conversations').objectStore('conversations').getAll();
          all.onsuccess = () => resolve(all.result);
        };
      });
      return convs.some((c) => Object.values(c.messages).some((m) => m.streamId === sid && m.content.length > 0));
    }, id, { timeout: WAIT, polling: 100 });
    const before = (await storedConversations(page)).flatMap((c) => Object.values(c.messages)).find((m) => m.streamId === id);
    const resumed = page.waitForRequest((r) => r.url().includes(`/v1/stream/${id}?from=`), { timeout: WAIT });
    await page.reload();
    await throttle(page, 0);
    const req = await resumed;
    assert.ok(Number(new URL(req.url()).searchParams.get('from')) > 0, 'resumes from the saved offset, not from 0');
    await page.getByRole('button', { name: 'One day', exact: true }).click();
    await waitDone(answers(page).last());
    const msg = (await storedConversations(page)).flatMap((c) => Object.values(c.messages)).find((m) => m.role === 'assistant' && m.content.startsWith(before.content) && m.status === 'done' && !m.streamId && m.createdAt === before.createdAt);
    assert.ok(msg, 'the resumed answer continues the saved one');
    assert.equal(msg.content, await streamText(server, id), 'resumed text equals the whole stream: nothing lost or repeated');
  });

  it('conversations and settings survive a browser restart', async () => {
    await context.close();
    await open();
    await page.goto(server.url + '/');
    await page.getByRole('button', { name: 'Once upon a time', exact: true }).click();
    assert.equal(await users(page).count(), 2);
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    await page.getByRole('button', { name: 'Settings' }).click();
    assert.equal(await page.getByTestId('sampling-max_tokens').inputValue(), '120');
    await page.getByRole('dialog', { name: 'Settings' }).getByRole('button', { name: 'Close' }).click();
  });

  it('rename, search and delete conversations', async () => {
    await page.getByRole('button', { name: 'Rename One day' }).click();
    await page.getByRole('textbox', { name: 'New title' }).fill('Renamed chat');
    await page.getByRole('textbox', { name: 'New title' }).press('Enter');
    await page.getByRole('button', { name: 'Renamed chat', exact: true }).waitFor();
    // A word no TinyStories answer holds, so the other conversation cannot match by its text.
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill('renamed');
    await page.getByRole('button', { name: 'Once upon a time', exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('searchbox', { name: 'Search conversations' }).fill('');
    await page.getByRole('button', { name: 'Once upon a time', exact: true }).waitFor();
    page.once('dialog', (d) => d.accept());
    await page.getByRole('button', { name: 'Delete Renamed chat' }).click();
    await page.getByRole('button', { name: 'Renamed chat', exact: true }).waitFor({ state: 'detached' });
    assert.equal((await storedConversations(page)).length, 1);
  });

  it('imports are validated, and imported model text is rendered safely (Markdown, code, math, no script)', async () => {
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Import' }).click();
    await (await chooser).setFiles({ name: 'bad.json', mimeType: 'application/json', buffer: Buffer.from('{"format":"something-else"}') });
    assert.match(await page.getByTestId('import-error').textContent(), /Not a Hearth conversation export/);

    const evil = [
      '# Title',
      '<script>window.__pwned = 1</script>',
      '<img src="x" onerror="window.__pwned = 2">',
      '[click](javascript:window.__pwned=3)',
      '```python\nprint("hi")\n```',
      'Euler: $e^{i\\pi} + 1 = 0$',
    ].join('\n\n');
    const doc = {
      format: 'hearth-conversations',
      version: 1,
      conversations: [{
        title: 'Imported', systemPrompt: '', createdAt: 1, updatedAt: 2, roots: ['u'], leaf: 'a',
        messages: {
          u: { id: 'u', parent: null, children: ['a'], role: 'user', content: 'show me', status: 'done' },
          a: {
            id: 'a', parent: 'u', children: [], role: 'assistant', status: 'done',
            content: '<think>The user wants a demo.</think>' + evil,
            toolCalls: [{ name: 'get_weather', arguments: '{"city":"Oslo"}' }],
          },
        },
      }],
    };
    const chooser2 = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Import' }).click();
    await (await chooser2).setFiles({ name: 'ok.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(doc)) });
    await page.getByRole('button', { name: 'Imported', exact: true }).click();
    const md = answers(page).last().getByTestId('answer');
    await md.locator('h1').waitFor();
    assert.equal(await md.locator('script').count(), 0);
    assert.equal(await md.locator('[onerror]').count(), 0);
    assert.equal(await md.locator('a[href^="javascript"]').count(), 0);
    assert.equal(await md.locator('.code-block code.language-python .hljs-built_in').count(), 1);
    await md.getByRole('button', { name: 'Copy code' }).waitFor();
    assert.ok((await md.locator('.katex').count()) >= 1);
    const thinking = answers(page).last().locator('details.thinking');
    assert.equal(await thinking.getAttribute('open'), null, 'thinking is folded');
    assert.match(await thinking.textContent(), /The user wants a demo/);
    assert.doesNotMatch(await md.textContent(), /The user wants a demo/);
    assert.match(await answers(page).last().getByTestId('tool-call').textContent(), /get_weather[\s\S]*Oslo/);
    await page.waitForTimeout(200);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await screenshot(page, 'markdown');
  });

  it('fits a phone-width window: the conversation list becomes a drawer', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    const list = page.getByRole('navigation', { name: 'Conversations' });
    const menu = page.getByRole('button', { name: 'Conversations' });
    await page.waitForFunction(() => document.querySelector('nav.sidebar').getBoundingClientRect().right <= 1); // off screen
    assert.ok(await menu.isVisible());
    await menu.click();
    await page.waitForFunction(() => document.querySelector('nav.sidebar').getBoundingClientRect().x >= 0);
    await screenshot(page, 'phone-drawer');
    await list.getByRole('button', { name: 'Close list' }).click();
    await page.waitForFunction(() => document.querySelector('nav.sidebar').getBoundingClientRect().right <= 1);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `no horizontal scrolling (page is ${width}px wide)`);
    const v = await axeViolations(page);
    assert.deepEqual(v, [], JSON.stringify(v));
    await screenshot(page, 'phone');
    await page.setViewportSize({ width: 1100, height: 800 });
  });

  it('sends an attached text file with the message', async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach text files' }).click();
    await (await chooser).setFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('Lily has a red ball.') });
    await page.getByRole('button', { name: 'Remove notes.txt' }).waitFor();
    const posted = page.waitForRequest((r) => r.url().endsWith('/v1/chat/completions'));
    await send(page, 'Read this');
    const body = JSON.parse((await posted).postData());
    assert.match(body.messages.at(-1).content, /^Read this\n\n--- notes\.txt ---\nLily has a red ball\.$/);
    await waitDone(answers(page).last());
    await users(page).last().getByText('Attached: notes.txt').waitFor();
  });

  it('streams a 4,000-token answer without blocking the page, and renders all of it', async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('button', { name: 'Settings' }).click();
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    await dialog.getByTestId('sampling-max_tokens').fill('4000');
    await dialog.getByTestId('sampling-max_tokens').press('Tab');
    await dialog.getByRole('button', { name: 'Close' }).click();
    // The tiny model ends its stories after a few hundred tokens: the request the page sends
    // also asks the server to ignore end-of-text, so the answer runs its full 4,000 tokens.
    await page.route('**/v1/chat/completions', (route) =>
      route.continue({ postData: JSON.stringify({ ...JSON.parse(route.request().postData()), ignore_eos: true }) }));
    await page.evaluate(() => {
      window.__longTasks = [];
      window.__frameGaps = [];
      window.__updates = 0;
      new PerformanceObserver((list) => window.__longTasks.push(...list.getEntries().map((e) => e.duration))).observe({ type: 'longtask' });
      // One callback per batch of DOM changes to the messages: the page's updates.
      new MutationObserver(() => window.__updates++).observe(document.querySelector('[data-testid=messages]'), { subtree: true, childList: true, characterData: true });
      let last = performance.now();
      const tick = (now) => {
        window.__frameGaps.push(now - last);
        last = now;
        if (!window.__stopFrames) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    });
    const loadBefore = os.loadavg()[0];
    const stopTrace = await traceMainThread(page);
    const t0 = Date.now();
    await send(page, 'Tell me a very long story');
    const answer = answers(page).last();
    await answer.and(page.locator('[data-status=streaming]')).waitFor({ timeout: WAIT });
    // The page answers input while the answer streams: typing reaches the text box.
    const box = page.getByRole('textbox', { name: 'Message' });
    const typed = Date.now();
    await box.pressSequentially('still here', { delay: 5 });
    const typingMs = Date.now() - typed;
    assert.equal(await box.inputValue(), 'still here');
    assert.equal(await answer.getAttribute('data-status'), 'streaming', 'typed while the answer was still streaming');
    await box.fill('');
    await waitDone(answer, LONG_WAIT);
    const wall = Date.now() - t0;
    const trace = await stopTrace();
    const loadAfter = os.loadavg()[0];
    await page.unroute('**/v1/chat/completions');
    const { longTasks, frameGaps, updates } = await page.evaluate(() => {
      window.__stopFrames = true;
      return { longTasks: window.__longTasks, frameGaps: window.__frameGaps, updates: window.__updates };
    });
    const stats = await answer.getByTestId('stats').textContent();
    assert.match(stats, /\b4000 tokens\b/, stats);
    const [conv] = (await storedConversations(page)).filter((c) => c.title === 'Tell me a very long story');
    const stored = Object.values(conv.messages).find((m) => m.role === 'assistant');
    assert.equal(stored.stats.completionTokens, 4000);
    assert.equal(stored.content, await streamText(server, streamIds.at(-1)), 'the stored answer is the whole stream');
    // Everything was rendered: the page shows the answer's text to its end (Markdown may drop
    // punctuation it reads as markup, so both sides are compared as letters and digits).
    const letters = (t) => t.replace(/[^\p{L}\p{N}]/gu, '');
    const shown = letters(await answer.getByTestId('answer').textContent());
    const sent = letters(stored.content);
    assert.ok(shown.length >= sent.length * 0.98, `rendered ${shown.length} of ${sent.length} letters`);
    assert.equal(shown.slice(-200), sent.slice(-200), 'the rendered answer ends where the stream ended');
    const longest = Math.max(0, ...longTasks);
    const worstFrame = Math.max(0, ...frameGaps);
    record({
      streaming_4000: {
        answer_tokens: stored.stats.completionTokens,
        answer_chars: stored.content.length,
        wall_ms: wall,
        long_tasks: longTasks.length,
        longest_task_ms: longest,
        long_tasks_total_ms: longTasks.reduce((a, b) => a + b, 0),
        worst_frame_gap_ms: Math.round(worstFrame),
        frames: frameGaps.length,
        typing_10_keys_ms: typingMs,
        updates,
        main_thread: trace,
        cpu_ms_per_update: Math.round((100 * trace.cpu_ms) / Math.max(1, updates)) / 100,
        load_average_before: loadBefore,
        load_average_after: loadAfter,
      },
    });
    console.log(`4000 tokens in ${wall} ms: ${longTasks.length} long tasks ${JSON.stringify(longTasks.map(Math.round))}, longest ${longest} ms, worst frame gap ${Math.round(worstFrame)} ms; ` +
      `${updates} updates, main thread ${JSON.stringify(trace)}; load average ${loadBefore.toFixed(2)} -> ${loadAfter.toFixed(2)}`);
    judgeLongTasks(assert, { longTasks, trace, loadAverage: loadBefore, what: 'the 4,000-token answer' });
    await screenshot(page, 'long-answer');
  });

  it('says so in the page when the server is gone', async () => {
    await server.stop();
    await send(page, 'Are you there?');
    const err = answers(page).last().getByTestId('answer-error');
    await err.waitFor({ timeout: WAIT });
    assert.match(await err.textContent(), /Cannot reach the hearth server/);
    await screenshot(page, 'server-gone');
    server = null;
  });
});
