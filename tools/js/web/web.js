// The `web` tool (world `web` in wit/web.wit). `fetch` goes out through wasi:http, so
// every request meets the host's egress gate; redirects are returned, not followed, so
// each hop is the caller's decision and is checked again by the host.

const fail = (tag, val) => ({ tag, val });

async function get(url, accept) {
  let response;
  try {
    response = await fetch(url, { headers: { accept }, redirect: 'manual' });
  } catch (e) {
    // The guest's error objects cannot cross the component boundary: send the message.
    throw fail('request-failed', `GET ${url}: ${e?.message ?? e}`);
  }
  if (response.status < 200 || response.status > 299) {
    throw fail('bad-status', response.status);
  }
  return response.text();
}

// RFC 6901: `/a/b~1c/0` names doc.a["b/c"][0]; `~0` is `~`.
function lookup(doc, pointer) {
  if (!pointer) return doc;
  if (!pointer.startsWith('/')) {
    throw fail('bad-content', `the pointer \`${pointer}\` must be empty or start with \`/\``);
  }
  let value = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    const found = Array.isArray(value)
      ? /^(0|[1-9][0-9]*)$/.test(key) && Number(key) < value.length
      : value !== null && typeof value === 'object' && Object.hasOwn(value, key);
    if (!found) {
      throw fail('bad-content', `the pointer \`${pointer}\` names nothing: no \`${key}\``);
    }
    value = value[key];
  }
  return value;
}

export async function getJson(url, pointer) {
  const body = await get(url, 'application/json');
  let doc;
  try {
    doc = JSON.parse(body);
  } catch (e) {
    throw fail('bad-content', `the response of ${url} is not JSON: ${e.message}`);
  }
  return JSON.stringify(lookup(doc, pointer));
}

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };
const decode = (s) =>
  s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, e) =>
    e[0] === '#'
      ? String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : Number(e.slice(1)))
      : (ENTITIES[e.toLowerCase()] ?? m));

export async function links(url, maxLinks) {
  const html = await get(url, 'text/html');
  const max = maxLinks ?? 100;
  const seen = new Set();
  const out = [];
  const anchor = /<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))[^>]*>([\s\S]*?)<\/a\s*>/gi;
  for (const m of html.matchAll(anchor)) {
    if (out.length >= max) break;
    const href = decode((m[1] ?? m[2] ?? m[3]).trim());
    if (href.startsWith('#') || /^javascript:/i.test(href)) continue;
    let absolute;
    try {
      absolute = new URL(href, url).href;
    } catch {
      continue;
    }
    if (seen.has(absolute)) continue;
    seen.add(absolute);
    const text = decode(m[4].replace(/<[^>]*>/g, ' ')).replace(/\s+/g, ' ').trim();
    out.push({ url: absolute, text });
  }
  return out;
}
