// The official TypeScript SDK v2 client (@modelcontextprotocol/client) running the interop cases.
//
//   node client.mjs --mode legacy|auto|2026-07-28 (--command '["argv", ...]' | --url URL)
//
// Prints one JSON line {case: {ok, detail, value}}; the Python side compares via-relay and direct.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const argv = process.argv.slice(2);
const opt = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const modeArg = opt('--mode');
const mode = modeArg === 'legacy' || modeArg === 'auto' ? modeArg : { pin: modeArg };
const CASE_TIMEOUT = 15000;
const SPILL_KEY = 'ocx-proxy/spill';

function bigRecord(text, meta) {
  let full = text;
  let kind = 'inline';
  if (meta && meta[SPILL_KEY]) {
    const info = meta[SPILL_KEY];
    if (!text.includes(info.txt)) throw new Error('assert: the preview does not name its file');
    if (text.length >= 10000) throw new Error(`assert: the preview is ${text.length} characters`);
    full = readFileSync(info.txt, 'utf8');
    kind = 'spilled';
  }
  return [kind, createHash('sha256').update(full, 'utf8').digest('hex').slice(0, 16), full.length];
}

const cases = {
  version: async (c) => c.getNegotiatedProtocolVersion?.() ?? null,
  // The relay adds its reader tool: the server's tools must be the same.
  tools: async (c) => (await c.listTools()).tools.map((t) => t.name).filter((n) => !n.startsWith('read_spilled_output')).sort(),
  echo: async (c) => (await c.callTool({ name: 'echo', arguments: { text: 'héllo 👋' } })).content.map((b) => b.text),
  structured: async (c) => (await c.callTool({ name: 'report', arguments: { rows: 3 } })).structuredContent,
  big: async (c) => {
    const r = await c.callTool({ name: 'big', arguments: { n: 50000 } });
    return bigRecord(r.content[0].text, r._meta);
  },
  resource: async (c) => (await c.readResource({ uri: 'demo://small' })).contents.map((x) => x.text),
  'big-resource': async (c) => {
    const r = await c.readResource({ uri: 'demo://big' });
    if (r.contents[0].uri !== 'demo://big') throw new Error('assert: uri ' + r.contents[0].uri);
    return bigRecord(r.contents[0].text, r._meta);
  },
  'input-required': async (c) => (await c.callTool({ name: 'ask_colour', arguments: {} })).content.map((b) => b.text),
};

function oneLine(err) {
  return String((err && err.message) || err).replace(/\s+/g, ' ').slice(0, 300);
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(timer));
}

const report = {};
const client = new Client({ name: 'ocx-interop-ts-client', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } });
client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { colour: 'teal' } }));
const command = opt('--command') ? JSON.parse(opt('--command')) : null;
const transport = command
  ? new StdioClientTransport({ command: command[0], args: command.slice(1), env: process.env, stderr: 'ignore' })
  : new StreamableHTTPClientTransport(new URL(opt('--url')));
try {
  await withTimeout(client.connect(transport), 2 * CASE_TIMEOUT, 'connect');
  for (const [name, run] of Object.entries(cases)) {
    try {
      report[name] = { ok: true, value: await withTimeout(run(client), CASE_TIMEOUT, name) };
    } catch (err) {
      report[name] = { ok: false, detail: oneLine(err) };
    }
  }
} catch (err) {
  for (const name of Object.keys(cases)) report[name] = report[name] || { ok: false, detail: 'connect: ' + oneLine(err) };
}
process.stdout.write(JSON.stringify(report) + '\n');
await withTimeout(client.close(), 5000, 'close').catch(() => {});
process.exit(0);
