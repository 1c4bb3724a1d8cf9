// The web UI against a store-mode `hearth serve` started with --api-key: the page loads
// without the key and says it needs one (a wrong key is named as such); with the key entered
// in Settings the models dialog lists the store, loads a model and chats with it, pulls a
// model from a real docker-registry with a progress bar, and deletes it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODELS, inCI, modelPath } from '../e2e/lib/paths.mjs';
import { startServer } from '../e2e/lib/server.mjs';
import { dockerRegistryExecutable, startDockerRegistry } from '../e2e/lib/docker_registry.mjs';
import { axeViolations, chromiumPath, launch, screenshot, throttle } from './browser.mjs';

const stories = modelPath(MODELS.stories);
const haveRegistry = fs.existsSync(dockerRegistryExecutable());
if (!haveRegistry && inCI()) throw new Error('docker-registry missing (scripts/setup.sh installs it)');
const skip = (!stories && 'stories model missing') || (!chromiumPath() && 'chromium missing') || (!haveRegistry && 'docker-registry missing');
const KEY = 'webui-test-key-7f3a';
const WAIT = 60000;

describe('web UI: model store and API key', { skip }, () => {
  let registry;
  let server;
  let root;
  let profile;
  let context;
  let page;
  let remote;

  before(async () => {
    registry = await startDockerRegistry();
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-webui-store-'));
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-webui-profile-'));
    server = await startServer({
      model: null,
      apiKey: KEY,
      args: ['--parallel', '1', '--allow-local-files'],
      env: { HEARTH_MODELS: root, HEARTH_OLLAMA_MODELS: 'off' },
    });
    // One model in the store, and one only in the registry (created, pushed, removed here).
    remote = `${registry.address}/webui/story:v1`;
    for (const name of ['story', remote]) {
      const created = await server.request('POST', '/api/create', { model: name, from: stories, stream: false });
      assert.equal(created.status, 200, created.text);
    }
    const pushed = await server.request('POST', '/api/push', { model: remote, insecure: true, stream: false });
    assert.equal(pushed.status, 200, pushed.text);
    const removed = await server.request('DELETE', '/api/delete', { model: remote });
    assert.equal(removed.status, 200, removed.text);
    context = await launch(profile);
    page = context.pages()[0] ?? (await context.newPage());
  });
  after(async () => {
    await context?.close();
    await server?.stop();
    await registry?.stop();
    for (const d of [root, profile]) if (d) fs.rmSync(d, { recursive: true, force: true });
  });

  it('loads without the key and asks for it; works once it is entered', async () => {
    await page.goto(server.url + '/');
    const banner = page.getByTestId('server-error');
    await banner.waitFor();
    assert.match(await banner.textContent(), /API key.*Settings/);
    await screenshot(page, 'needs-key');
    await page.getByRole('button', { name: 'Settings' }).click();
    const dialog = page.getByRole('dialog', { name: 'Settings' });
    // A wrong key is named as such, not as a missing one.
    await dialog.getByLabel('API key').fill('not-the-key');
    await dialog.getByRole('button', { name: 'Save key' }).click();
    await banner.filter({ hasText: 'refused the API key' }).waitFor();
    assert.match(await banner.textContent(), /^The server refused the API key \(401 unauthorized\): check the key in Settings\.$/);
    await dialog.getByLabel('API key').fill(KEY);
    await dialog.getByRole('button', { name: 'Save key' }).click();
    await banner.waitFor({ state: 'detached' });
    await dialog.getByRole('button', { name: 'Close' }).click();
  });

  it('lists the store, loads a model and chats with it', async () => {
    await page.getByRole('button', { name: 'Models' }).click();
    const dialog = page.getByRole('dialog', { name: 'Models' });
    const row = dialog.locator('[data-testid=model-row][data-name="story:latest"]');
    await row.waitFor();
    assert.equal(await dialog.locator('[data-testid=model-row]').count(), 1);
    assert.equal(await row.getByTestId('loaded').count(), 0);
    await row.getByRole('button', { name: 'Use story:latest' }).click();
    await row.getByTestId('loaded').waitFor({ timeout: WAIT });
    assert.equal(await page.getByRole('combobox', { name: 'Model' }).inputValue(), 'story:latest');
    assert.deepEqual(await axeViolations(page), []);
    await screenshot(page, 'models');
    await dialog.getByRole('button', { name: 'Close' }).click();

    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('Once upon a time');
    await box.press('Enter');
    const answer = page.locator('[data-testid=message][data-role=assistant]').last();
    await answer.and(page.locator('[data-status=done]')).waitFor({ timeout: WAIT });
    assert.ok((await answer.getByTestId('answer').textContent()).length > 0);
  });

  it('pulls a model with a progress bar, then deletes it', async () => {
    await page.getByRole('button', { name: 'Models' }).click();
    const dialog = page.getByRole('dialog', { name: 'Models' });
    // Record every status the page shows (the progress lines are slowed down on the wire).
    await page.evaluate(() => {
      window.__pullSeen = [];
      new MutationObserver(() => {
        const st = document.querySelector('[data-testid=pull-status]');
        const bar = document.querySelector('[data-testid=pull-progress] progress');
        if (st) window.__pullSeen.push({ status: st.textContent, value: bar?.value, max: bar?.max });
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    const cdp = await throttle(page, 400);
    await dialog.getByLabel('Pull a model').fill(remote);
    await dialog.getByLabel('plain HTTP registry (insecure)').check();
    await dialog.getByRole('button', { name: 'Pull', exact: true }).click();
    await page.waitForFunction(() => window.__pullSeen.some((s) => s.status.startsWith('success')), null, { timeout: WAIT });
    await cdp.detach();
    await throttle(page, 0);
    const seen = await page.evaluate(() => window.__pullSeen);
    const statuses = [...new Set(seen.map((s) => s.status.replace(/ \d+%$/, '')))];
    assert.equal(statuses[0], 'starting', `statuses shown: ${statuses.join(' | ')}`);
    // The bar ends full at the last layer's size, as the NDJSON progress reported it.
    const last = seen.at(-1);
    assert.equal(last.status, 'success 100%');
    assert.ok(last.max > 1e6 && last.value === last.max, JSON.stringify(last));
    const pulledName = `${remote}`;
    const row = dialog.locator(`[data-testid=model-row][data-name="${pulledName}"]`);
    await row.waitFor();
    const tags = await server.getJson('/api/tags');
    assert.ok(tags.models.some((m) => m.name === pulledName));

    page.once('dialog', (d) => d.accept());
    await row.getByRole('button', { name: `Delete ${pulledName}` }).click();
    await row.waitFor({ state: 'detached', timeout: WAIT });
    const after = await server.getJson('/api/tags');
    assert.ok(!after.models.some((m) => m.name === pulledName));
    await screenshot(page, 'pulled-and-deleted');
  });

  it('a model that is gone from the store is reported in the page (404)', async () => {
    const removed = await server.request('DELETE', '/api/delete', { model: 'story' });
    assert.equal(removed.status, 200, removed.text);
    await page.getByRole('dialog', { name: 'Models' }).getByRole('button', { name: 'Close' }).click();
    await page.getByRole('button', { name: 'New chat' }).click();
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('Hello again');
    await box.press('Enter');
    const err = page.locator('[data-testid=message][data-role=assistant]').last().getByTestId('answer-error');
    await err.waitFor({ timeout: WAIT });
    assert.match(await err.textContent(), /Not found \(404\).*story/);
    await screenshot(page, 'model-gone');
  });
});
