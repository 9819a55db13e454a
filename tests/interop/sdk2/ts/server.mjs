// An MCP server built with the official TypeScript SDK v2 (@modelcontextprotocol/server), dual-era.
//
//   node server.mjs                    stdio
//   node server.mjs --port N [--json]  Streamable HTTP on /mcp (createMcpHandler: stateless,
//                                      SSE replies, or JSON replies with --json)
//
// The same tools and resources as sdk2_server.py, so both clients run the same cases.
import { createServer } from 'node:http';
import { McpServer, createMcpHandler, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { toNodeHandler } from '@modelcontextprotocol/node';
import * as z from 'zod';

const argv = process.argv.slice(2);
const port = argv.includes('--port') ? Number(argv[argv.indexOf('--port') + 1]) : 0;
const json = argv.includes('--json');

function big(n) {
  const lines = [];
  for (let i = 0; i < Math.floor(n / 48) + 1; i++) {
    lines.push(`line ${String(i).padStart(6, '0')}: the quick brown fox jumps over it.\n`);
  }
  return lines.join('').slice(0, n);
}

function makeServer() {
  const server = new McpServer({ name: 'ocx-interop-ts', version: '1.0.0' });
  server.registerTool('echo', { description: 'Return the text unchanged.', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('big', { description: 'Exactly n characters.', inputSchema: z.object({ n: z.number().int() }) },
    async ({ n }) => ({ content: [{ type: 'text', text: big(n) }] }));
  server.registerTool('report', {
    description: 'Structured output.',
    inputSchema: z.object({ rows: z.number().int().default(3) }),
    outputSchema: z.object({ total: z.number().int(), names: z.array(z.string()) }),
  }, async ({ rows }) => {
    const data = { total: rows, names: Array.from({ length: rows }, (_, i) => `row-${i}`) };
    return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
  });
  const colour = z.object({ colour: z.string() });
  server.registerTool('ask_colour', { description: 'Needs the favourite colour.', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'colour', colour);
      if (!answer) {
        return inputRequired({ inputRequests: { colour: inputRequired.elicit({ message: 'Favourite colour?', requestedSchema: colour }) } });
      }
      return { content: [{ type: 'text', text: `colour: ${answer.colour}` }] };
    });
  server.registerResource('small', 'demo://small', { mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'small resource text' }] }));
  server.registerResource('big', 'demo://big', { mimeType: 'text/plain' }, async (uri) => {
    const lines = [];
    for (let i = 0; i < 2000; i++) lines.push(`2026-07-28T00:00:00Z INFO request ${String(i).padStart(6, '0')} served\n`);
    return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: lines.join('') }] };
  });
  return server;
}

if (port) {
  const handler = toNodeHandler(createMcpHandler(makeServer, { responseMode: json ? 'json' : 'sse' }));
  createServer((req, res) => handler(req, res)).listen(port, '127.0.0.1');
} else {
  serveStdio(makeServer);
}
