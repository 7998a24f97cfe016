// Builds a component from a JavaScript module with the componentize-js library (what
// `jco componentize` calls):  node componentize.mjs SOURCE.js WIT_DIR WORLD OUT.wasm
import { writeFile } from 'node:fs/promises';
import { componentize } from '@bytecodealliance/componentize-js';

const [sourcePath, witPath, worldName, out] = process.argv.slice(2);
const { component } = await componentize({
  sourcePath,
  witPath,
  worldName,
  // Leave out what the tool does not use (fetch, i.e. wasi:http, stays available).
  disableFeatures: ['stdio', 'random', 'clocks'],
});
await writeFile(out, component);
