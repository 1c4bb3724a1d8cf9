// A streaming answer rendered as it grows, without re-rendering what is finished. The text is
// split into top-level Markdown blocks. A block is finished once, in the text's complete lines,
// two more non-blank blocks have begun after it: a line still being written can become anything,
// and a complete line can still change how the line before it reads ("-" under a line makes a
// heading or a table of it, which marked may split differently), so the last two stay open.
// Finished blocks are rendered once and kept (with a key, so the view keeps their DOM); each
// update lexes only the text after them and renders only the blocks whose text changed. Code is
// highlighted once, when its fence is closed; before that it shows as plain text. When the
// answer is done every block is finished, and the blocks are the ones a full render of the whole
// text gives (renderBlocks).
//
// Reference definitions ([label]: url) change links anywhere in the text, before them too: once
// one is seen the whole text is rendered on each update, as a full render would.
import type { Token, Tokens, TokensList } from 'marked';
import { lexBlocks, normalizeNewlines, renderBlock } from './markdown';

export interface Block {
  key: number;
  html: string;
}

// A fenced code block whose closing fence line is complete: nothing can be added to it.
function fenceClosed(t: Token): boolean {
  if (t.type !== 'code') return false;
  const open = /^ {0,3}(`{3,}|~{3,})/.exec(t.raw);
  if (!open || !t.raw.endsWith('\n')) return false;
  const lines = t.raw.replace(/\n+$/, '').split('\n');
  const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[lines.length - 1]);
  return lines.length >= 2 && !!close && close[1][0] === open[1][0] && close[1].length >= open[1].length;
}

// Whether highlighting can change the block's HTML: a code block, or one nested in a list or quote.
function holdsCode(t: Token): boolean {
  if (t.type === 'code') return true;
  if (t.type === 'list') return (t as Tokens.List).items.some((item) => item.tokens.some(holdsCode));
  if (t.type === 'blockquote') return (t as Tokens.Blockquote).tokens.some(holdsCode);
  return false;
}

// The indexes of the blocks that are not blank lines.
function nonBlank(tokens: Token[]): number[] {
  return tokens.flatMap((t, i) => (t.type === 'space' ? [] : [i]));
}

export class MarkdownStream {
  // The finished blocks, in order; a new array whenever one is added.
  finished: Block[] = [];
  // The HTML of the blocks after them (empty when the answer is done).
  open = '';
  private text = '';
  private stable = 0; // characters of `text` in finished blocks
  private nextKey = 0;
  private whole = false; // a reference definition was seen: no blocks are kept while streaming
  // The HTML of the unfinished blocks by type, text and highlighting, from the last update.
  private rendered = new Map<string, string>();

  // Renders `text`, which normally extends the text of the last call (anything else starts
  // over); `done`: the answer is complete. Returns whether `finished` changed.
  update(raw: string, done: boolean): boolean {
    const text = normalizeNewlines(raw);
    let changed = false;
    if (this.stable > 0 && !text.startsWith(this.text.slice(0, this.stable))) {
      this.reset();
      changed = true;
    }
    this.text = text;
    let tokens: Token[] = lexBlocks(text.slice(this.stable));
    if (!this.whole && Object.keys((tokens as TokensList).links).length > 0) {
      if (this.stable > 0) {
        this.reset();
        this.text = text;
        changed = true;
        tokens = lexBlocks(text);
      }
      this.whole = true;
    }
    const next = new Map<string, string>();
    const render = (t: Token, highlight: boolean): string => {
      highlight &&= holdsCode(t);
      // By text as well as raw text: marked can give the same raw text different content (an
      // indented line merged into a paragraph loses its indent only when the line after it
      // reads as a table's delimiter row).
      const id = `${t.type}\u0000${highlight ? 1 : 0}\u0000${t.raw}\u0000${'text' in t ? t.text : ''}`;
      // (In whole-text mode a block's links may change with a later definition: no reuse.)
      const html = (!this.whole && this.rendered.get(id)) || renderBlock(t, highlight);
      next.set(id, html);
      return html;
    };
    const added: Block[] = [];
    const finish = (list: Token[], count: number) => {
      for (let i = 0; i < count; i++) {
        const html = render(list[i], true);
        this.stable += list[i].raw.length;
        if (html) added.push({ key: this.nextKey++, html });
      }
    };
    if (done) {
      finish(tokens, tokens.length);
      tokens = [];
    } else if (!this.whole && nonBlank(tokens).length > 2) {
      // Which blocks are finished is decided on the complete lines only: how a line reads can
      // depend on the next one ("-" under a line makes a table header or a heading of it), and
      // an unfinished line can still become anything. Of those blocks, the last two stay open.
      const tail = text.slice(this.stable);
      const complete = lexBlocks(tail.slice(0, tail.lastIndexOf('\n') + 1));
      const blocks = nonBlank(complete);
      if (blocks.length > 2) {
        finish(complete, blocks[blocks.length - 2]);
        tokens = lexBlocks(text.slice(this.stable));
      }
    }
    // The last block may be code still being written: plain text until its fence is closed.
    const blocks = nonBlank(tokens);
    const last = blocks[blocks.length - 1];
    this.open = tokens.map((t, i) => render(t, i !== last || fenceClosed(t))).join('');
    this.rendered = next;
    if (added.length) {
      this.finished = [...this.finished, ...added];
      changed = true;
    }
    return changed;
  }

  private reset(): void {
    this.finished = [];
    this.open = '';
    this.text = '';
    this.stable = 0;
    this.whole = false;
    this.rendered.clear();
  }
}
