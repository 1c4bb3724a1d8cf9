// The model store as the e2e tests see it on disk: where a name's manifest lies, and what is
// wrong with a store (a manifest whose blob is missing or the wrong size, a temporary file left
// behind), so each test can assert that none of that is found.
import fs from 'node:fs';
import path from 'node:path';

// The manifest file of a full name (host/namespace/model:tag) under store `root`.
export function manifestFile(root, name) {
  const [repo, tag] = name.split(/:(?=[^:/]+$)/);
  return path.join(root, 'manifests', ...repo.split('/'), tag);
}

// Every problem found in store `root`: [] for a consistent one.
export function storeProblems(root) {
  const problems = [];
  const walk = (dir) => (fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []).flatMap((e) =>
    e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]);
  for (const file of walk(path.join(root, 'manifests'))) {
    if (file.includes('.tmp-')) {
      problems.push(`temporary file ${file}`);
      continue;
    }
    const manifest = JSON.parse(fs.readFileSync(file, 'utf8'));
    for (const layer of [manifest.config, ...manifest.layers]) {
      const blob = path.join(root, 'blobs', layer.digest.replace(':', '-'));
      if (!fs.existsSync(blob)) problems.push(`${file}: blob ${layer.digest} missing`);
      else if (fs.statSync(blob).size !== layer.size) problems.push(`${file}: blob ${layer.digest} has the wrong size`);
    }
  }
  for (const file of walk(path.join(root, 'blobs'))) {
    if (file.includes('.tmp-')) problems.push(`temporary file ${file}`);
  }
  return problems;
}
