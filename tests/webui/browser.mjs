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
