// A strict checker for the Prometheus text exposition format (version 0.0.4), so the e2e
// tests can prove /metrics is something a Prometheus server would scrape: HELP/TYPE lines,
// metric and label names, escaped label values, float values (NaN, ±Inf), optional
// timestamps, one group per family, no duplicate series, and the histogram/summary rules
// (le/quantile labels, cumulative buckets ending in +Inf equal to _count, _sum and _count).
// parsePrometheusText() throws an Error naming the line for anything a scraper would reject.

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parseValue(text) {
  if (text === 'NaN') return NaN;
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  // Go's ParseFloat syntax: decimal or exponent forms (no hex, no underscores, no empty).
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) {
    throw new Error(`'${text}' is not a float`);
  }
  return Number(text);
}

// Parses `{a="x",b="y"}` starting at s[i] === '{'; returns [labels, index after '}'].
function parseLabels(s, i, lineNo) {
  const labels = {};
  i += 1;
  for (;;) {
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] === '}') return [labels, i + 1];
    let j = i;
    while (j < s.length && /[a-zA-Z0-9_]/.test(s[j])) j++;
    const name = s.slice(i, j);
    if (!LABEL_NAME.test(name)) throw new Error(`line ${lineNo}: bad label name '${name}'`);
    if (name.startsWith('__')) throw new Error(`line ${lineNo}: label names starting with __ are reserved`);
    i = j;
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] !== '=') throw new Error(`line ${lineNo}: expected '=' after label ${name}`);
    i++;
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] !== '"') throw new Error(`line ${lineNo}: label value of ${name} must be quoted`);
    i++;
    let value = '';
    for (;;) {
      if (i >= s.length) throw new Error(`line ${lineNo}: unterminated label value`);
      const c = s[i];
      if (c === '\\') {
        const n = s[i + 1];
        if (n === '\\') value += '\\';
        else if (n === '"') value += '"';
        else if (n === 'n') value += '\n';
        else throw new Error(`line ${lineNo}: bad escape '\\${n}' in label value`);
        i += 2;
      } else if (c === '"') {
        i++;
        break;
      } else {
        value += c;
        i++;
      }
    }
    if (name in labels) throw new Error(`line ${lineNo}: label ${name} repeated`);
    labels[name] = value;
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (s[i] === ',') {
      i++;
      continue;
    }
    if (s[i] === '}') return [labels, i + 1];
    throw new Error(`line ${lineNo}: expected ',' or '}' in labels`);
  }
}

// The family a sample name belongs to, given the TYPE lines seen so far.
function familyOf(sampleName, families) {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (sampleName.endsWith(suffix)) {
      const base = sampleName.slice(0, -suffix.length);
      const f = families.get(base);
      if (f && (f.type === 'histogram' || (f.type === 'summary' && suffix !== '_bucket'))) return base;
    }
  }
  return sampleName;
}

function unescapeHelp(text, lineNo) {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\') {
      const n = text[i + 1];
      if (n === '\\') out += '\\';
      else if (n === 'n') out += '\n';
      else throw new Error(`line ${lineNo}: bad escape '\\${n}' in HELP`);
      i++;
    } else {
      out += text[i];
    }
  }
  return out;
}

function checkHistogram(f) {
  const series = new Map(); // other labels -> {buckets: [[le, v]], sum, count}
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    if (!series.has(key)) series.set(key, { buckets: [], sum: undefined, count: undefined });
    const e = series.get(key);
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new Error(`${f.name}: bucket without le label`);
      e.buckets.push([parseValue(le), s.value]);
    } else if (s.name === `${f.name}_sum`) {
      e.sum = s.value;
    } else if (s.name === `${f.name}_count`) {
      e.count = s.value;
    } else {
      throw new Error(`${f.name}: histogram holds a sample named ${s.name}`);
    }
  }
  for (const e of series.values()) {
    if (e.buckets.length === 0) throw new Error(`${f.name}: histogram without buckets`);
    for (let i = 1; i < e.buckets.length; i++) {
      if (!(e.buckets[i][0] > e.buckets[i - 1][0])) throw new Error(`${f.name}: le bounds not ascending`);
      if (e.buckets[i][1] < e.buckets[i - 1][1]) throw new Error(`${f.name}: buckets not cumulative`);
    }
    const last = e.buckets[e.buckets.length - 1];
    if (last[0] !== Infinity) throw new Error(`${f.name}: no le="+Inf" bucket`);
    if (e.count === undefined || e.sum === undefined) throw new Error(`${f.name}: _sum or _count missing`);
    if (last[1] !== e.count) throw new Error(`${f.name}: +Inf bucket ${last[1]} != _count ${e.count}`);
    for (const [, v] of e.buckets) {
      if (!Number.isInteger(v) || v < 0) throw new Error(`${f.name}: bucket count ${v} is not a count`);
    }
  }
}

function checkSummary(f) {
  for (const s of f.samples) {
    if (s.name === f.name) {
      if (s.labels.quantile === undefined) throw new Error(`${f.name}: summary sample without quantile`);
      const q = parseValue(s.labels.quantile);
      if (!(q >= 0 && q <= 1)) throw new Error(`${f.name}: quantile ${q} outside [0, 1]`);
    } else if (s.name !== `${f.name}_sum` && s.name !== `${f.name}_count`) {
      throw new Error(`${f.name}: summary holds a sample named ${s.name}`);
    }
  }
}

// Returns Map(familyName -> {name, type, help, samples: [{name, labels, value, timestamp}]}).
export function parsePrometheusText(text) {
  if (typeof text !== 'string') throw new Error('metrics text must be a string');
  if (text.length > 0 && !text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map();
  const finished = new Set(); // families whose group of lines has ended
  let current = null;
  const seenSeries = new Set();
  const lines = text.split('\n');
  lines.pop(); // after the final newline
  lines.forEach((raw, idx) => {
    const lineNo = idx + 1;
    if (raw.includes('\r')) throw new Error(`line ${lineNo}: carriage return`);
    const line = raw.replace(/^[ \t]+/, '');
    if (line === '') return;
    const enter = (name) => {
      if (current !== name) {
        if (finished.has(name)) throw new Error(`line ${lineNo}: lines of ${name} are not one group`);
        if (current !== null) finished.add(current);
        current = name;
      }
      if (!families.has(name)) families.set(name, { name, type: 'untyped', help: undefined, samples: [], typed: false });
      return families.get(name);
    };
    if (line.startsWith('#')) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(line);
      if (!m) return; // an ordinary comment
      const [, kind, name, rest = ''] = m;
      if (!METRIC_NAME.test(name)) throw new Error(`line ${lineNo}: bad metric name '${name}'`);
      const f = enter(name);
      if (kind === 'HELP') {
        if (f.help !== undefined) throw new Error(`line ${lineNo}: second HELP for ${name}`);
        f.help = unescapeHelp(rest, lineNo);
      } else {
        if (f.typed) throw new Error(`line ${lineNo}: second TYPE for ${name}`);
        if (f.samples.length > 0) throw new Error(`line ${lineNo}: TYPE for ${name} after its samples`);
        const type = rest.trim();
        if (!TYPES.has(type)) throw new Error(`line ${lineNo}: unknown type '${type}'`);
        f.type = type;
        f.typed = true;
      }
      return;
    }
    let i = 0;
    while (i < line.length && /[a-zA-Z0-9_:]/.test(line[i])) i++;
    const name = line.slice(0, i);
    if (!METRIC_NAME.test(name)) throw new Error(`line ${lineNo}: bad metric name in '${raw}'`);
    let labels = {};
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (line[i] === '{') [labels, i] = parseLabels(line, i, lineNo);
    const rest = line.slice(i).trim().split(/[ \t]+/);
    if (rest.length < 1 || rest.length > 2 || rest[0] === '') throw new Error(`line ${lineNo}: expected 'value [timestamp]' in '${raw}'`);
    let value;
    try {
      value = parseValue(rest[0]);
    } catch (e) {
      throw new Error(`line ${lineNo}: ${e.message}`);
    }
    let timestamp;
    if (rest.length === 2) {
      if (!/^-?\d+$/.test(rest[1])) throw new Error(`line ${lineNo}: bad timestamp '${rest[1]}'`);
      timestamp = Number(rest[1]);
    }
    const familyName = familyOf(name, families);
    const f = enter(familyName);
    if (f.type === 'histogram' && name === familyName) throw new Error(`line ${lineNo}: bare sample ${name} in a histogram`);
    if (f.type === 'counter' && !(value >= 0)) throw new Error(`line ${lineNo}: counter ${name} is ${value}`);
    const seriesKey = name + JSON.stringify(Object.entries(labels).sort());
    if (seenSeries.has(seriesKey)) throw new Error(`line ${lineNo}: series ${name}${JSON.stringify(labels)} repeated`);
    seenSeries.add(seriesKey);
    f.samples.push({ name, labels, value, timestamp });
  });
  for (const f of families.values()) {
    if (f.type === 'histogram') checkHistogram(f);
    if (f.type === 'summary') checkSummary(f);
    delete f.typed;
  }
  return families;
}

// The value of one series (labels must match exactly), or undefined.
export function sampleValue(families, name, labels = {}) {
  const want = JSON.stringify(Object.entries(labels).sort());
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want) return s.value;
    }
  }
  return undefined;
}
