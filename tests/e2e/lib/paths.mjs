// Where the end-to-end tests find the hearth binary and the shared test models. The binary
// comes from HEARTH_BIN (CTest sets it to the built `hearth`); models come from
// HEARTH_TEST_MODELS, else HEARTH_SHARED_DIR/models, else ../shared/models beside the checkout
// (the build's default). A missing model skips a test locally but FAILS it when CI=true, as the
// rest of the suite does (a skip would let CI pass without the data).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

// The checkout root, found by walking up from this file to the directory holding CMakeLists.txt
// and tests/ (this file may run from the source tree or from a copy in the build directory,
// in which case HEARTH_SOURCE_DIR says where the checkout is).
function sourceRoot() {
  if (process.env.HEARTH_SOURCE_DIR) return process.env.HEARTH_SOURCE_DIR;
  return path.resolve(here, '..', '..', '..');
}

export function hearthBin() {
  const bin = process.env.HEARTH_BIN || path.join(sourceRoot(), 'build', 'release', 'src', 'app', 'hearth');
  if (!fs.existsSync(bin)) {
    throw new Error(`hearth binary not found at ${bin}; build it and set HEARTH_BIN`);
  }
  return bin;
}

export function modelsDir() {
  if (process.env.HEARTH_TEST_MODELS) return process.env.HEARTH_TEST_MODELS;
  const shared = process.env.HEARTH_SHARED_DIR || path.join(sourceRoot(), '..', 'shared');
  return path.join(shared, 'models');
}

export function inCI() {
  const ci = (process.env.CI || '').toLowerCase();
  return ci === 'true' || ci === '1';
}

// The absolute path of a shared model (relative to the models directory), or null when it is
// missing and we are not in CI. In CI a missing model throws.
export function modelPath(relative) {
  const p = path.join(modelsDir(), relative);
  if (fs.existsSync(p)) return p;
  if (inCI()) throw new Error(`test model missing: ${p} (CI=true: a missing model fails)`);
  return null;
}

// The models these tests use.
export const MODELS = {
  stories: 'stories260K-llama-f32.gguf',      // real TinyStories weights, no chat template
  llama: 'random/llama-Q8_0.gguf',            // random weights with a chat template
  llamaF16: 'random/llama-F16.gguf',          // the same model unquantized (create --quantize)
  bert: 'random/bert-F32.gguf',               // encoder for embeddings
  qwen2: 'random/qwen2-Q8_0.gguf',            // random weights, GPT-2 BPE (every byte spellable)
  qwen3: 'random/qwen3-Q8_0.gguf',            // random weights, Qwen3 (with the Qwen3 template)
};
