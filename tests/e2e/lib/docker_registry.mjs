// A real registry for the e2e tests: Debian's docker-registry on a free loopback port with a
// fresh storage folder (the same config tests/common/docker_registry.cpp writes), ready once
// GET /v2/ answers, stopped with its folder removed. `blobDataPath` finds a blob's bytes in the
// storage, for tests that corrupt one.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export function dockerRegistryExecutable() {
  return process.env.HEARTH_DOCKER_REGISTRY || '/usr/bin/docker-registry';
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export async function startDockerRegistry() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-registry-e2e-'));
  const storage = path.join(dir, 'storage');
  fs.mkdirSync(storage);
  for (let attempt = 0; attempt < 3; ++attempt) {
    const port = await freePort();
    const config = path.join(dir, 'config.yml');
    fs.writeFileSync(config, [
      'version: 0.1',
      'log:\n  level: warn\n  accesslog:\n    disabled: true',
      `storage:\n  filesystem:\n    rootdirectory: ${storage}\n  delete:\n    enabled: true\n  maintenance:\n    uploadpurging:\n      enabled: false`,
      `http:\n  addr: 127.0.0.1:${port}`,
      '',
    ].join('\n'));
    const proc = spawn(dockerRegistryExecutable(), ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    proc.stderr.on('data', (d) => { log += d; });
    let exited = false;
    proc.on('exit', () => { exited = true; });
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline && !exited) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/v2/`);
        if (r.status === 200) {
          return {
            address: `127.0.0.1:${port}`,
            blobDataPath: (digest) => path.join(storage, 'docker/registry/v2/blobs/sha256', digest.slice(7, 9), digest.slice(7), 'data'),
            async stop() {
              if (!exited) {
                proc.kill('SIGTERM');
                await Promise.race([new Promise((r) => proc.on('exit', r)), sleep(5000)]);
                if (!exited) proc.kill('SIGKILL');
              }
              fs.rmSync(dir, { recursive: true, force: true });
            },
          };
        }
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
    if (!exited) {
      proc.kill('SIGKILL');
      throw new Error(`docker-registry did not answer GET /v2/:\n${log}`);
    }
  }
  throw new Error('docker-registry did not start (ports taken?)');
}
