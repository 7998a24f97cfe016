// Builds a JavaScript tool into a component with the componentize-js library, which is
// what `jco componentize` calls (its CLI fails to stat paths on some machines).
//
//   node componentize.mjs SOURCE.js WIT_DIR WORLD OUT.wasm
//
// The library is taken from $COMPONENTIZE_JS_DIR (an npm project with it installed, as
// scripts/guest-langs.sh makes), else resolved from this file's location as usual.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [sourcePath, witPath, worldName, out] = process.argv.slice(2);
if (!out) {
  console.error('usage: node componentize.mjs SOURCE.js WIT_DIR WORLD OUT.wasm');
  process.exit(2);
}

async function library() {
  const dir = process.env.COMPONENTIZE_JS_DIR;
  if (!dir) return import('@bytecodealliance/componentize-js');
  const pkg = join(dir, 'node_modules', '@bytecodealliance', 'componentize-js');
  const manifest = JSON.parse(await readFile(join(pkg, 'package.json'), 'utf8'));
  return import(pathToFileURL(join(pkg, manifest.exports.import)).href);
}

const { componentize } = await library();
const { component } = await componentize({
  sourcePath,
  witPath,
  worldName,
  // The tool needs only wasi:http (for fetch) and what the runtime itself imports.
  disableFeatures: ['stdio', 'random', 'clocks'],
});
await writeFile(out, component);
