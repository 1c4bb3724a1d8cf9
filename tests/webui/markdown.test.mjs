// The web UI's streaming Markdown renderer (webui/src/lib/markdown_stream.ts) in a real chromium.
// First without a server: the module, bundled with esbuild (vite's own, from the UI build's
// node_modules), runs in a blank page with the real DOMPurify, KaTeX and highlight.js. Texts with
// every kind of block, and random ones built from tricky pieces, are fed to it in random small
// chunks; at every step each block it calls finished must be the block a full render of the
// whole text ends with, and when the answer is done its blocks must be exactly the full render.
// Then in the page served by `hearth serve`: an answer with every kind of block streams in small
// chunks (from a scripted SSE source the test runs, in place of the model), the page keeps the
// DOM of finished blocks, updates at most once per animation frame, and ends with exactly what
// the page renders for the stored message after a reload.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { MODELS, modelPath } from '../e2e/lib/paths.mjs';
import { startServer } from '../e2e/lib/server.mjs';
import { chromiumPath, judgeLongTasks, launch, record, screenshot, traceMainThread } from './browser.mjs';

const skip = !chromiumPath() && 'chromium missing';
const stories = modelPath(MODELS.stories);
const WAIT = 60000;
const work = process.env.HEARTH_WEBUI_WORK;

// A message with every kind of block the UI renders (and an unclosed fence at the end).
const BODY = [
  '# Notes on *streaming*',
  '',
  'A paragraph with **bold**, `code`, a [link](https://example.com/a_b) and inline math $e^{i\\pi} + 1 = 0$.',
  'It goes on over a second line, with _emphasis\nthat spans_ lines.',
  '',
  '- first item',
  '- second item with `code`',
  '  - nested item',
  '- third item',
  '',
  '1. one',
  '2. two',
  '',
  '   still two, loosely',
  '3. three',
  '',
  '```js',
  'function add(a, b) {',
  '  return a + b; // sum',
  '}',
  '```',
  '',
  '$$',
  '\\int_0^1 x^2 \\, dx = \\frac{1}{3}',
  '$$',
  '',
  '| name | value | note |',
  '|:-----|------:|:----:|',
  '| alpha | 1 | *first* |',
  '| beta | 22 | `second` |',
  '',
  '> A quote',
  '> over two lines.',
  '',
  '***',
  '',
  '```python',
  'def square(x):',
  '    return x * x',
  '```',
  'Closing words.',
].join('\n');
const RICH = BODY + '\n\nThen an unclosed fence:\n\n~~~\nplain text to the end';
// About 4,000 tokens of it (16 KB; sent as about 3,600 chunks).
const LONG = Array.from({ length: 27 }, () => BODY).join('\n\n');

// Pieces that stress block boundaries: setext headings, "***" that turns into text, "$$" inside
// a paragraph, lazy list continuations, indented code with blank lines, HTML, tables that
// interrupt paragraphs, CR LF line ends, tabs.
const PIECES = [
  'plain words here', 'para\n===', 'para\n---', 'text\n***', '***x', '- a\n- b', '- a\n\n  b',
  '- a\n\n b', '1. x\n2. y', '* star\n+ plus', '> quote\nlazy', '    code\n\n    more code',
  '```\ncode\n```', '```js\nlet x = 1;\n```', '````\n```\ninner\n````', '~~~sh\nls -l\n~~~',
  'a $$b$$ c', 'text $$x^2$$', '$$\nx\n$$', '$$\ny\n$$ after', '$inline$ math', '$$ a $$',
  'row\n| h1 | h2 |\n|---|---|\n| c | d |', '| a |\n|---|', '<div>\nhtml *block*\n</div>',
  '<span>inline</span> html', '**bold\nacross** lines', '`code\nspan`', 'line  \nbreak',
  '# heading', '## heading ##', 'tab\tseparated', 'crlf\r\nline', 'x\r\n\r\ny', '---', '___',
  '- [ ] task\n- [x] done', '<!-- comment -->', 'https://example.com/auto', '\\$escaped\\$',
  '-', ':-:', '2. item', 'head\n-|-', 'x\n|-|', '1) paren', '=', '> q\n> > nested', '[ref]: /url',
];
const SEPARATORS = ['\n', '\n\n', '\n\n\n', ' ', '', '\n  ', '\n\t'];

function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomText(rand) {
  let t = '';
  const n = 4 + Math.floor(rand() * 12);
  for (let i = 0; i < n; i++) {
    t += PIECES[Math.floor(rand() * PIECES.length)] + SEPARATORS[Math.floor(rand() * SEPARATORS.length)];
  }
  return t;
}

// The renderer and the full render as an IIFE defining window.HearthMarkdown.
function bundle() {
  const requireUi = createRequire(path.join(work, 'package.json'));
  const esbuild = requireUi('esbuild');
  const out = esbuild.buildSync({
    stdin: {
      contents: "export { MarkdownStream } from './markdown_stream'; export { renderBlocks } from './markdown';",
      resolveDir: path.join(work, 'src', 'lib'),
      loader: 'ts',
    },
    bundle: true,
    format: 'iife',
    globalName: 'HearthMarkdown',
    write: false,
    target: 'es2022',
    logLevel: 'silent',
  });
  return out.outputFiles[0].text + '\nwindow.HearthMarkdown = HearthMarkdown;';
}

// Runs in the page: streams `text` in chunks of the given sizes (cycled), checking every step.
// `steps` false: only the end is compared (a reference definition re-renders what came before).
function streamInPage({ text, sizes, steps = true }) {
  const { MarkdownStream, renderBlocks } = window.HearthMarkdown;
  const full = renderBlocks(text);
  const md = new MarkdownStream();
  let at = 0;
  let step = 0;
  let frozenSeen = 0;
  while (at < text.length) {
    at = Math.min(text.length, at + sizes[step++ % sizes.length]);
    md.update(text.slice(0, at), false);
    for (let i = 0; steps && i < md.finished.length; i++) {
      if (md.finished[i].html !== full[i]) {
        return { ok: false, at, block: i, got: md.finished[i].html, want: full[i] ?? null };
      }
    }
    frozenSeen = Math.max(frozenSeen, md.finished.length);
  }
  const keys = md.finished.map((b) => b.key);
  md.update(text, true);
  const final = md.finished.map((b) => b.html);
  const same = final.length === full.length && final.every((h, i) => h === full[i]);
  const keptKeys = keys.every((k, i) => md.finished[i].key === k);
  return { ok: same && md.open === '' && keptKeys, steps: step, blocks: full.length, frozenSeen, final: same ? null : final, want: same ? null : full };
}

describe('web UI: streaming Markdown renders block by block, as a full render does', { skip }, () => {
  let profile;
  let context;
  let page;

  before(async () => {
    if (!work) throw new Error('HEARTH_WEBUI_WORK must name the web UI build folder (ctest sets it)');
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-webui-profile-'));
    context = await launch(profile);
    page = context.pages()[0] ?? (await context.newPage());
    await page.setContent('<!doctype html><html><body></body></html>');
    await page.evaluate(bundle());
  });
  after(async () => {
    await context?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  it('a message with paragraphs, lists, code, math and a table: one character at a time and in random chunks', async () => {
    const rand = prng(20);
    for (const sizes of [[1], [2, 5, 1, 9, 3], Array.from({ length: 32 }, () => 1 + Math.floor(rand() * 12))]) {
      const r = await page.evaluate(streamInPage, { text: RICH, sizes });
      assert.ok(r.ok, JSON.stringify(r, null, 1));
      // Blocks really were kept while streaming: all but the last two at the end.
      assert.ok(r.blocks === 13 && r.frozenSeen >= r.blocks - 2, JSON.stringify({ blocks: r.blocks, frozenSeen: r.frozenSeen }));
    }
  });

  it('random texts built from pieces that stress block boundaries', async () => {
    const rand = prng(Number(process.env.HEARTH_MD_SEED || 7));
    for (let n = 0; n < Number(process.env.HEARTH_MD_TEXTS || 60); n++) {
      const text = randomText(rand);
      const sizes = Array.from({ length: 16 }, () => 1 + Math.floor(rand() * 6));
      // A reference definition re-renders the blocks before it: only the end is compared then.
      const r = await page.evaluate(streamInPage, { text, sizes, steps: !text.includes(']:') });
      assert.ok(r.ok, `text ${JSON.stringify(text)} in chunks ${JSON.stringify(sizes)}: ${JSON.stringify(r, null, 1)}`);
    }
  });

  it('reference definitions, which change links before them, still end as the full render', async () => {
    const text = 'See [the docs][d] and [home].\n\nMore text.\n\n[d]: https://example.com/docs\n\nAfter, [d] again.\n\n[home]: /\n';
    for (const sizes of [[1], [3, 7]]) {
      const r = await page.evaluate(streamInPage, { text, sizes, steps: false });
      assert.ok(r.ok, JSON.stringify(r, null, 1));
    }
    const html = await page.evaluate((t) => window.HearthMarkdown.renderBlocks(t).join(''), text);
    assert.match(html, /<a href="https:\/\/example.com\/docs"[^>]*>the docs<\/a>/);
  });

  it('code is plain text while its fence is open, highlighted once it closes', async () => {
    const r = await page.evaluate(() => {
      const md = new window.HearthMarkdown.MarkdownStream();
      const seen = [];
      for (const t of ['Intro.\n\n```js\nconst x = 1;', 'Intro.\n\n```js\nconst x = 1;\n', 'Intro.\n\n```js\nconst x = 1;\n```', 'Intro.\n\n```js\nconst x = 1;\n```\n']) {
        md.update(t, false);
        seen.push(/hljs-keyword/.test(md.open));
      }
      md.update('Intro.\n\n```js\nconst x = 1;\n', true);
      seen.push(/hljs-keyword/.test(md.finished.map((b) => b.html).join('')));
      return seen;
    });
    // Open, open, closing line not finished, closed; and an unclosed fence at the end of the answer.
    assert.deepEqual(r, [false, false, false, true, true]);
  });

  it('model text cannot run script in a block or in the open tail', async () => {
    const r = await page.evaluate(() => {
      const md = new window.HearthMarkdown.MarkdownStream();
      const text = 'Hi <img src=x onerror="window.__pwned=1">\n\n<script>window.__pwned=2</script>\n\n[x](javascript:window.__pwned=3)\n\nend <svg onload="window.__pwned=4">';
      md.update(text, false);
      const open = md.open;
      md.update(text, true);
      return { html: open + md.finished.map((b) => b.html).join('') };
    });
    assert.doesNotMatch(r.html, /onerror|onload|<script|javascript:/i);
  });
});

// An OpenAI chat stream, in place of a model: POST /<name> streams streams[name].text in chunks
// of 1-8 characters (about a token each), streams[name].perTick chunks every 4 ms.
function scriptedStream(streams) {
  const server = http.createServer(async (req, res) => {
    req.resume();
    const { text, perTick } = streams[req.url.slice(1)];
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    const rand = prng(3);
    const event = (obj) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
    let chunks = 0;
    for (let at = 0; at < text.length; chunks++) {
      const n = 1 + Math.floor(rand() * 8);
      event({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text.slice(at, at + n) }, finish_reason: null }] });
      at += n;
      if (chunks % perTick === perTick - 1) await new Promise((r) => setTimeout(r, 4));
    }
    event({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: chunks, total_tokens: 5 + chunks } });
    res.end('data: [DONE]\n\n');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe('web UI: a streamed Markdown answer in the page', { skip: skip || (!stories && 'stories model missing') }, () => {
  let server;
  let source;
  let profile;
  let context;
  let page;

  before(async () => {
    server = await startServer({ model: stories });
    source = await scriptedStream({ rich: { text: RICH, perTick: 1 }, long: { text: LONG, perTick: 4 } });
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-webui-profile-'));
    context = await launch(profile);
    page = context.pages()[0] ?? (await context.newPage());
  });
  after(async () => {
    await context?.close();
    await server?.stop();
    source?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  it('keeps finished blocks, updates once per frame at most, and ends as the page renders it after a reload', async () => {
    await page.goto(server.url + '/');
    await page.route('**/v1/chat/completions', (route) => route.continue({ url: `http://127.0.0.1:${source.address().port}/rich` }));
    // Per animation frame: whether the answer's DOM changed in it (mutation records are
    // delivered at the end of the task that made them, so they are counted in that frame).
    await page.evaluate(() => {
      window.__frames = 0;
      window.__changedFrames = 0;
      window.__changes = 0;
      let changedNow = false;
      const tick = () => {
        window.__frames++;
        if (changedNow) window.__changedFrames++;
        changedNow = false;
        if (!window.__stop) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      new MutationObserver((records) => {
        if (!records.some((r) => r.target.closest?.('[data-testid=answer]') ?? r.target.parentElement?.closest('[data-testid=answer]'))) return;
        window.__changes++;
        changedNow = true;
      }).observe(document.querySelector('[data-testid=messages]'), { subtree: true, childList: true, characterData: true });
    });
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('Show me everything');
    await box.press('Enter');
    const answer = page.locator('[data-testid=message][data-role=assistant]').last();
    // The heading is the first block: once three more have begun (the numbered list is the
    // fourth) it is finished, and its element must stay the same node to the end.
    await page.waitForFunction(() => {
      const md = document.querySelector('[data-role=assistant] [data-testid=answer]');
      if (!md?.querySelector('ol')) return false;
      window.__heading = md.querySelector('h1');
      return true;
    }, null, { timeout: WAIT, polling: 'raf' });
    assert.equal(await answer.getAttribute('data-status'), 'streaming', 'the answer was still streaming');
    await answer.and(page.locator('[data-status=done]')).waitFor({ timeout: WAIT });
    const streamed = await page.evaluate(() => {
      window.__stop = true;
      const md = document.querySelector('[data-role=assistant] [data-testid=answer]');
      return {
        html: md.innerHTML.replace(/<!--[^]*?-->/g, ''),
        sameHeading: window.__heading === md.querySelector('h1') && window.__heading.isConnected,
        frames: window.__frames,
        changedFrames: window.__changedFrames,
        changes: window.__changes,
      };
    });
    console.log(`${RICH.length} characters: ${streamed.changes} DOM updates in ${streamed.changedFrames} of ${streamed.frames} frames`);
    assert.ok(streamed.sameHeading, 'the finished heading kept its DOM node');
    // One change per frame at most: the stream's many chunks were coalesced. (The last change,
    // when the answer is done, and the first, when the message appears, may share a frame.)
    assert.ok(streamed.changes <= streamed.changedFrames + 2, JSON.stringify(streamed, ['frames', 'changedFrames', 'changes']));
    record({ markdown_stream: { chunks_sent: Math.ceil(RICH.length / 4.5), dom_updates: streamed.changes, frames: streamed.frames } });
    for (const sel of ['h1', 'ul ul', 'ol', 'table', 'blockquote', 'hr', '.katex', '.math-display .katex-display', 'code.language-js .hljs-keyword', 'code.language-python .hljs-keyword']) {
      assert.ok(await answer.locator(sel).count() >= 1, `the answer has ${sel}`);
    }
    await screenshot(page, 'markdown-streamed');

    // The stored message rendered at once, as a page opened later shows it.
    await page.unroute('**/v1/chat/completions');
    await page.reload();
    await page.getByRole('button', { name: 'Show me everything', exact: true }).click();
    await answer.locator('h1').waitFor();
    const full = await answer.getByTestId('answer').evaluate((md) => md.innerHTML.replace(/<!--[^]*?-->/g, ''));
    assert.equal(streamed.html, full, 'the streamed answer ends as the full render');
  });

  it('a 4,000-token Markdown answer: the page work per update is small', async () => {
    await page.goto(server.url + '/');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.route('**/v1/chat/completions', (route) => route.continue({ url: `http://127.0.0.1:${source.address().port}/long` }));
    await page.evaluate(() => {
      window.__updates = 0;
      window.__longTasks = [];
      new PerformanceObserver((list) => window.__longTasks.push(...list.getEntries().map((e) => e.duration))).observe({ type: 'longtask' });
      new MutationObserver(() => window.__updates++).observe(document.querySelector('[data-testid=messages]'), { subtree: true, childList: true, characterData: true });
    });
    const load = os.loadavg()[0];
    const stopTrace = await traceMainThread(page);
    const t0 = Date.now();
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('A long one');
    await box.press('Enter');
    const answer = page.locator('[data-testid=message][data-role=assistant]').last();
    await answer.and(page.locator('[data-status=done]')).waitFor({ timeout: WAIT * 3 });
    const wall = Date.now() - t0;
    const trace = await stopTrace();
    await page.unroute('**/v1/chat/completions');
    const { updates, longTasks } = await page.evaluate(() => ({ updates: window.__updates, longTasks: window.__longTasks }));
    assert.equal(await answer.locator('table').count(), 27, 'all of it was rendered');
    const perUpdate = Math.round((100 * trace.cpu_ms) / Math.max(1, updates)) / 100;
    record({
      markdown_4000: {
        chars: LONG.length, wall_ms: wall, updates, cpu_ms_per_update: perUpdate, main_thread: trace,
        long_tasks: longTasks.length, longest_task_ms: Math.max(0, ...longTasks), load_average: load,
      },
    });
    console.log(`${LONG.length} characters in ${wall} ms: ${updates} updates, ${perUpdate} ms of main-thread CPU each; ` +
      `${longTasks.length} long tasks ${JSON.stringify(longTasks.map(Math.round))}; main thread ${JSON.stringify(trace)}; load average ${load.toFixed(2)}`);
    judgeLongTasks(assert, { longTasks, trace, loadAverage: load, what: 'the 4,000-token Markdown answer' });
  });
});
