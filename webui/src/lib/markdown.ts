// Model output to safe HTML: Markdown (marked), code highlighting (highlight.js, a fixed set of
// languages), math ($...$ inline, $$...$$ display; KaTeX), then DOMPurify, so nothing the model
// writes (<script>, on* attributes, javascript: links) can run in the page. Code blocks get a copy
// button, handled by the message view. The text is rendered block by block (each top-level block
// of the Markdown on its own, sanitised on its own), so a streaming answer can keep the blocks it
// finished and re-render only the open one (markdown_stream.ts); a full render is the same blocks.
import { Marked, type Token, type TokensList, type Tokens } from 'marked';
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import katex from 'katex';

for (const [name, lang] of Object.entries({ bash, c, cpp, css, diff, go, java, javascript, json, python, rust, sql, typescript, xml, yaml })) {
  hljs.registerLanguage(name, lang);
}
hljs.registerAliases(['sh', 'shell', 'console'], { languageName: 'bash' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['c++', 'hpp', 'cc'], { languageName: 'cpp' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['rs'], { languageName: 'rust' });

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);
}

function math(tex: string, display: boolean): string {
  try {
    return katex.renderToString(tex, { displayMode: display, throwOnError: false, trust: false, strict: 'ignore', output: 'htmlAndMathml' });
  } catch {
    return `<code>${escapeHtml(tex)}</code>`;
  }
}

const marked = new Marked({ gfm: true, breaks: false });
// False while a code block is still being written: it is shown as plain text and highlighted once,
// when it is finished (renderBlock's option).
let highlightCode = true;
marked.use({
  extensions: [
    {
      // Display math: a block starting with $$ up to the next $$ that ends its line, with no blank
      // line and no other $$ between. It does not interrupt a paragraph (no `start`): $$...$$
      // inside one is inline math in display style, which looks the same. (Cutting paragraphs at
      // $$ made a later setext underline, which marked matches without the cut, swallow them.)
      name: 'mathBlock',
      level: 'block',
      tokenizer(src: string) {
        const m = /^ {0,3}\$\$((?:(?!\$\$|\n[ \t]*\n)[\s\S])+?)\$\$[ \t]*(?:\n|$)/.exec(src);
        if (m) return { type: 'mathBlock', raw: m[0], text: m[1].trim() };
        return undefined;
      },
      renderer: (t: Tokens.Generic) => `<div class="math-display">${math(t.text, true)}</div>\n`,
    },
    {
      name: 'mathInline',
      level: 'inline',
      start: (src: string) => src.indexOf('$'),
      tokenizer(src: string) {
        const m = /^\$\$([^$]+?)\$\$/.exec(src) ?? /^\$(?!\s)([^$\n]+?)(?<!\s)\$(?!\d)/.exec(src);
        if (m) return { type: 'mathInline', raw: m[0], text: m[1], display: m[0].startsWith('$$') };
        return undefined;
      },
      renderer: (t: Tokens.Generic) => math(t.text, Boolean(t.display)),
    },
  ],
  renderer: {
    code(token: Tokens.Code) {
      const lang = (token.lang ?? '').split(/\s/)[0].toLowerCase();
      const known = lang && hljs.getLanguage(lang);
      const body = known && highlightCode ? hljs.highlight(token.text, { language: lang, ignoreIllegals: true }).value : escapeHtml(token.text);
      return (
        `<div class="code-block"><div class="code-head"><span>${escapeHtml(lang || 'text')}</span>` +
        `<button type="button" class="copy-code" aria-label="Copy code">Copy</button></div>` +
        `<pre><code class="hljs${known ? ' language-' + escapeHtml(lang) : ''}">${body}</code></pre></div>\n`
      );
    },
  },
});

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  // An image the model wrote without a description is read as decorative, not as its file name.
  if (node.tagName === 'IMG' && !node.hasAttribute('alt')) node.setAttribute('alt', '');
  if (node.tagName === 'A' && node.getAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

function sanitize(html: string): string {
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true, mathMl: true, svg: true },
    FORBID_TAGS: ['style', 'form', 'input', 'textarea', 'select', 'iframe', 'object', 'embed'],
  });
}

// The text as the Markdown lexer reads it (it turns CR LF and CR into LF first): offsets into
// this string are offsets into the blocks' raw text.
export function normalizeNewlines(text: string): string {
  return text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
}

// The top-level blocks of `text` (normalised); their raw texts, in order, make up the text. The
// list's `links` holds the reference definitions ([label]: url) found, which decide how links
// anywhere in the text render.
export function lexBlocks(text: string): TokensList {
  return marked.lexer(text);
}

// One top-level block as sanitised HTML; `highlight` false shows code as plain text.
export function renderBlock(token: Token, highlight = true): string {
  if (token.type === 'space') return '';
  highlightCode = highlight;
  try {
    return sanitize(marked.parser([token]));
  } finally {
    highlightCode = true;
  }
}

// The whole text at once: every block, highlighted.
export function renderBlocks(text: string): string[] {
  return lexBlocks(normalizeNewlines(text)).map((t) => renderBlock(t)).filter((html) => html !== '');
}

// Splits "<think>…</think>answer" into the thinking part (folded in the view) and the answer.
// An unclosed <think> while streaming: everything after it is thinking so far.
export function splitThinking(content: string): { thinking: string; answer: string; thinkingOpen: boolean } {
  const start = content.indexOf('<think>');
  if (start < 0) return { thinking: '', answer: content, thinkingOpen: false };
  const end = content.indexOf('</think>', start);
  if (end < 0) return { thinking: content.slice(start + 7), answer: content.slice(0, start), thinkingOpen: true };
  return { thinking: content.slice(start + 7, end).trim(), answer: content.slice(0, start) + content.slice(end + 8), thinkingOpen: false };
}
