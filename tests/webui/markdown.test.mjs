// The web UI's streaming Markdown renderer (webui/src/lib/markdown_stream.ts) in a real chromium,
// without a server: the module, bundled with esbuild (vite's own, from the UI build's
// node_modules), runs in a blank page with the real DOMPurify, KaTeX and highlight.js. Texts with
// every kind of block, and random ones built from tricky pieces, are fed to it in random small
// chunks; at every step each block it calls finished must be the block a full render of the
// whole text ends with, and when the answer is done its blocks must be exactly the full render.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromiumPath, launch } from './browser.mjs';

const skip = !chromiumPath() && 'chromium missing';
const work = process.env.HEARTH_WEBUI_WORK;

// A message with every kind of block the UI renders.
export const RICH = [
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
  'Closing words, then an unclosed fence:',
  '',
  '~~~',
  'plain text to the end',
].join('\n');

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
      assert.ok(r.blocks === 12 && r.frozenSeen >= r.blocks - 2, JSON.stringify({ blocks: r.blocks, frozenSeen: r.frozenSeen }));
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
