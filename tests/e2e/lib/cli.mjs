// Runs the `hearth` command line the way a user would, for the references the HTTP answers are
// compared with: `hearth generate --json` (greedy continuation of a prompt) and
// `hearth embed --json` (pooled, normalised embeddings).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { hearthBin } from './paths.mjs';

const run = promisify(execFile);

async function runJson(args) {
  const { stdout } = await run(hearthBin(), args, { maxBuffer: 64 << 20, env: { ...process.env, HEARTH_LOG_LEVEL: 'error' } });
  return JSON.parse(stdout);
}

// {prompt_tokens, tokens, text, stop_reason, timings} of a greedy run (temperature 0).
export async function hearthGenerate(model, prompt, { n = 32, args = [] } = {}) {
  return runJson(['generate', '-m', model, '-p', prompt, '-n', String(n), '--temp', '0', '--json', ...args]);
}

// [[float...], ...] for each text.
export async function hearthEmbed(model, texts) {
  const out = await runJson(['embed', '-m', model, '--json', ...texts]);
  return out.embeddings;
}
