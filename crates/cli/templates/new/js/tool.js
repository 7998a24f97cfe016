// The {{name}} tool: implements world `{{name}}` of wit/{{name}}.wit. Exports are the WIT
// functions in camelCase; a `result<T, E>` returns T or throws E (here a string). An
// export may be `async`, e.g. to `await fetch(…)`, which goes through wasi:http.

export function greet(name, times) {
  if (!name) throw '`name` is empty: say who to greet';
  if (times < 1 || times > 10) throw `\`times\` is ${times}: give 1 to 10`;
  return Array(times).fill(`Hello, ${name}!`).join(' ');
}
