// Drives Debian's chromium (never a downloaded browser) through playwright-core from the web
// UI's node_modules (HEARTH_WEBUI_WORK: where the build ran `npm ci`). Also: CDP network
// throttling (so a fast model's answer streams slowly enough to stop or reload mid-way), the
// axe-core check, and where screenshots and measurements go (HEARTH_WEBUI_ARTIFACTS).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { inCI } from '../e2e/lib/paths.mjs';

const work = process.env.HEARTH_WEBUI_WORK;
if (!work) throw new Error('HEARTH_WEBUI_WORK must name the web UI build folder (ctest sets it)');
const requireUi = createRequire(path.join(work, 'package.json'));
const { chromium } = requireUi('playwright-core');

export const artifacts = process.env.HEARTH_WEBUI_ARTIFACTS || path.join(work, 'test-artifacts');
fs.mkdirSync(artifacts, { recursive: true });

export function chromiumPath() {
  const p = process.env.HEARTH_CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(p)) {
    const why = `chromium not found at ${p} (scripts/setup.sh installs Debian's chromium; HEARTH_CHROMIUM overrides)`;
    if (inCI()) throw new Error(why);
    return null;
  }
  return p;
}

// A browser with a persistent profile in `profileDir` (a restart reopens the same one);
// `extraArgs`: more chromium switches (e.g. --host-resolver-rules for a LAN name).
export async function launch(profileDir, extraArgs = []) {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', ...extraArgs],
    viewport: { width: 1100, height: 800 },
    timeout: 60000,
  });
}

// Limits the page's download rate (bytes/s); 0 lifts the limit.
export async function throttle(page, bytesPerSecond) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: 0,
    downloadThroughput: bytesPerSecond || -1,
    uploadThroughput: -1,
  });
  return cdp;
}

// axe-core's serious and critical violations on the page (evaluated over CDP, so the page's
// CSP does not apply to the injected script).
export async function axeViolations(page) {
  const source = fs.readFileSync(requireUi.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(source);
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
  });
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export async function screenshot(page, name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`) });
}

// Adds numbers to artifacts/measurements.json (read by docs/performance.md's author).
export function record(values) {
  const file = path.join(artifacts, 'measurements.json');
  let all = {};
  try {
    all = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    all = {};
  }
  Object.assign(all, values, { measured_at: new Date().toISOString() });
  fs.writeFileSync(file, JSON.stringify(all, null, 2) + '\n');
}

// The text of a finished stream, read back from the server's replay of it.
export async function streamText(server, id) {
  const r = await server.request('GET', `/v1/stream/${id}?from=0`);
  let text = '';
  for (const block of r.text.split('\n\n')) {
    const line = block.split('\n').find((l) => l.startsWith('data: '));
    if (!line || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6));
    text += chunk.choices?.[0]?.delta?.content ?? '';
  }
  return text;
}

// Records the page's renderer main thread with Chrome's tracing (CDP) until the returned
// function is called, which resolves to the tasks it ran: how many, their wall time and their
// thread CPU time ("tdur": time the thread actually ran, which a loaded machine does not
// stretch), and the longest task by wall time and by CPU time. A long task whose wall time far
// exceeds its CPU time was descheduled by the OS, not busy with the page's work.
//
// Tasks that are the browser's garbage collection (a V8 collection or an Oilpan sweep is most of
// their CPU time) are counted apart from the page's own tasks. Chromium schedules them itself:
// with frames drawn back to back it finds no idle time to sweep in slices, so it finishes a
// sweep in one low-priority task, 20 to 48 ms of CPU here at the same garbage (the sweeping over
// a 4,000-token answer totals 40 to 60 ms however it is split).
const GC_EVENT = /^(MajorGC|MinorGC|CppGC\.|V8\.GC)/;
export async function traceMainThread(page) {
  const cdp = await page.context().newCDPSession(page);
  const events = [];
  cdp.on('Tracing.dataCollected', (e) => events.push(...e.value));
  await cdp.send('Tracing.start', {
    transferMode: 'ReportEvents',
    traceConfig: { recordMode: 'recordAsMuchAsPossible', includedCategories: ['disabled-by-default-devtools.timeline', 'devtools.timeline', 'cppgc', 'disabled-by-default-cppgc', 'disabled-by-default-v8.gc'] },
  });
  return async () => {
    const complete = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
    await cdp.send('Tracing.end');
    await complete;
    await cdp.detach();
    // The page's main thread: the renderer main thread that ran the most tasks.
    const mains = new Set(events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
    const byThread = new Map();
    for (const e of events) {
      if (e.ph !== 'X' || e.name !== 'RunTask' || !mains.has(`${e.pid}:${e.tid}`)) continue;
      const key = `${e.pid}:${e.tid}`;
      if (!byThread.has(key)) byThread.set(key, []);
      byThread.get(key).push({ start: e.ts, end: e.ts + (e.dur ?? 0), wall: (e.dur ?? 0) / 1000, cpu: (e.tdur ?? e.dur ?? 0) / 1000, gc: 0, ran: {} });
    }
    const [mainKey, tasks] = [...byThread.entries()].sort((a, b) => b[1].length - a[1].length)[0] ?? ['', []];
    tasks.sort((a, b) => a.start - b.start);
    // The events inside the tasks, by kind of work (script, style, layout, paint, GC, ...), over
    // all tasks and per task; nested events count in each of their ancestors' kinds too. A task's
    // GC time is its longest collection event (nested GC events are not added up twice).
    const kinds = {};
    for (const e of events) {
      if (e.ph !== 'X' || e.name === 'RunTask' || `${e.pid}:${e.tid}` !== mainKey) continue;
      const cpu = (e.tdur ?? e.dur ?? 0) / 1000;
      kinds[e.name] = (kinds[e.name] ?? 0) + cpu;
      let lo = 0;
      let hi = tasks.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (tasks[mid].start <= e.ts) lo = mid + 1;
        else hi = mid;
      }
      const task = tasks[lo - 1];
      if (!task || e.ts + (e.dur ?? 0) > task.end) continue;
      task.ran[e.name] = (task.ran[e.name] ?? 0) + cpu;
      if (GC_EVENT.test(e.name)) task.gc = Math.max(task.gc, cpu);
    }
    const r1 = (x) => Math.round(x * 10) / 10;
    const sum = (list, f) => list.reduce((s, t) => s + f(t), 0);
    const top = (list, f) => list.reduce((m, t) => (f(t) > f(m) ? t : m), { wall: 0, cpu: 0, ran: {} });
    const ran = (t) => Object.entries(t.ran).sort((a, b) => b[1] - a[1]).slice(0, 4).map(([k, v]) => `${k} ${r1(v)}`).join(', ');
    const isGc = (t) => t.gc >= 0.8 * t.cpu && t.cpu > 0;
    const pageTasks = tasks.filter((t) => !isGc(t));
    const gcTasks = tasks.filter(isGc);
    const byWall = top(pageTasks, (t) => t.wall);
    const byCpu = top(pageTasks, (t) => t.cpu);
    const gcTop = top(gcTasks, (t) => t.cpu);
    return {
      tasks: tasks.length,
      wall_ms: r1(sum(tasks, (t) => t.wall)),
      cpu_ms: r1(sum(tasks, (t) => t.cpu)),
      // The page's own tasks (every task but the collections).
      longest_wall_ms: r1(byWall.wall),
      longest_wall_task_cpu_ms: r1(byWall.cpu),
      longest_wall_task_ran: ran(byWall),
      longest_cpu_ms: r1(byCpu.cpu),
      longest_cpu_task_ran: ran(byCpu),
      over_50ms_wall: pageTasks.filter((t) => t.wall > 50).length,
      over_50ms_cpu: pageTasks.filter((t) => t.cpu > 50).length,
      // The collections: their share of the main thread's CPU, and the longest.
      gc_tasks: gcTasks.length,
      gc_cpu_ms: r1(sum(tasks, (t) => t.gc)),
      gc_longest_cpu_ms: r1(gcTop.cpu),
      gc_longest_wall_ms: r1(gcTop.wall),
      gc_longest_ran: ran(gcTop),
      cpu_ms_by_kind: Object.fromEntries(Object.entries(kinds).sort((a, b) => b[1] - a[1]).slice(0, 12).map(([k, v]) => [k, r1(v)])),
    };
  };
}

// The 50 ms budget for long tasks (docs/performance.md): no task of the page's may block it
// longer. The page's own work is judged by thread CPU time from the trace, which a loaded machine
// does not stretch: always. Its tasks' wall time is judged only when the machine was quiet
// (1-minute load average below 2 when the answer began); on a loaded one the scheduler
// stretches tasks that ran a few ms of CPU, so they are reported with the load average and the
// CPU time the longest one really ran. The browser's collections (traceMainThread) are judged
// by what the page's garbage costs in all: at most a tenth of the main thread's CPU time (3% for
// a 4,000-token answer here); a collection longer than the budget is reported, not failed.
export const LONG_TASK_BUDGET_MS = 50;
export const GC_SHARE_BUDGET = 0.1;
export function judgeLongTasks(assert, { longTasks, trace, loadAverage, what }) {
  const longest = Math.max(0, ...longTasks);
  assert.ok(trace.longest_cpu_ms <= LONG_TASK_BUDGET_MS,
    `${what}: a task ran ${trace.longest_cpu_ms} ms of CPU on the page's main thread (${trace.longest_cpu_task_ran})`);
  assert.ok(trace.gc_cpu_ms <= GC_SHARE_BUDGET * trace.cpu_ms,
    `${what}: garbage collection took ${trace.gc_cpu_ms} of the main thread's ${trace.cpu_ms} ms of CPU`);
  if (loadAverage < 2) {
    assert.ok(trace.longest_wall_ms <= LONG_TASK_BUDGET_MS,
      `${what}: the page was blocked for ${trace.longest_wall_ms} ms at once, ${trace.longest_wall_task_cpu_ms} ms of it on CPU ` +
      `(${trace.longest_wall_task_ran}; load average ${loadAverage.toFixed(2)})`);
  } else if (trace.longest_wall_ms > LONG_TASK_BUDGET_MS) {
    console.log(`warning: ${what}: long tasks up to ${Math.round(trace.longest_wall_ms)} ms not judged at load average ${loadAverage.toFixed(2)} (2 or more); ` +
      `the longest ran ${trace.longest_wall_task_cpu_ms} ms of CPU`);
  }
  if (trace.gc_longest_wall_ms > LONG_TASK_BUDGET_MS || longest > LONG_TASK_BUDGET_MS) {
    console.log(`note: ${what}: the long-task observer's longest ${Math.round(longest)} ms; the longest collection ` +
      `${trace.gc_longest_wall_ms} ms (${trace.gc_longest_cpu_ms} ms of CPU: ${trace.gc_longest_ran})`);
  }
}
