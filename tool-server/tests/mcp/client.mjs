// Drives a tool-runtime MCP server with the official MCP TypeScript SDK client
// (@modelcontextprotocol/client, loaded from the node_modules folder in TOOLS_MCP_TS_SDK).
//
// usage: node client.mjs (--http URL --token TOKEN | --stdio COMMAND [ARG...])
//        [--mode auto|legacy] --answer MODE STEP...
//
// The same steps, answers and output as client.py: each STEP is NAME=JSON (a tool and its
// arguments), `list`, or `cancel:SECONDS:NAME=JSON` (the client gives the call up after that
// long); MODE answers a confirmation: `none` (no elicitation capability), `accept`,
// `edit:JSON`, `decline`, `cancel` or `silent:SECONDS`. `--mode auto` negotiates the newest
// revision (server/discover), `legacy` the initialize handshake (the SDK's default). One JSON
// line per step, one per elicitation received ({"elicitation": message}), and the protocol
// version first ({"protocol": VERSION}).

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = process.env.TOOLS_MCP_TS_SDK;
if (!sdk) {
  console.error('TOOLS_MCP_TS_SDK must name a node_modules folder with @modelcontextprotocol/client');
  process.exit(2);
}
const load = (file) => import(pathToFileURL(join(sdk, '@modelcontextprotocol/client/dist', file)).href);
const { Client, StreamableHTTPClientTransport } = await load('index.mjs');
const { StdioClientTransport } = await load('stdio.mjs');

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

const argv = process.argv.slice(2);
const opts = { mode: 'legacy', answer: 'none', steps: [] };
while (argv.length) {
  const a = argv.shift();
  if (a === '--http') opts.http = argv.shift();
  else if (a === '--token') opts.token = argv.shift();
  else if (a === '--mode') opts.mode = argv.shift();
  else if (a === '--answer') opts.answer = argv.shift();
  else if (a === '--stdio') {
    opts.stdio = argv.splice(0);
  } else opts.steps.push(a);
}

const answer = opts.answer;
const capabilities = answer === 'none' ? {} : { elicitation: { form: {} } };
const client = new Client(
  { name: 'ts-sdk-test-client', version: '1.0.0' },
  {
    capabilities,
    versionNegotiation: { mode: opts.mode === 'auto' ? 'auto' : 'legacy' },
  },
);
if (answer !== 'none') {
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params;
    emit({ elicitation: params.message, schema: params.requestedSchema });
    if (answer === 'accept') return { action: 'accept', content: {} };
    if (answer.startsWith('edit:')) return { action: 'accept', content: { arguments: answer.slice(5) } };
    if (answer === 'decline') return { action: 'decline' };
    if (answer === 'cancel') return { action: 'cancel' };
    if (answer.startsWith('silent:')) {
      await new Promise((r) => setTimeout(r, parseFloat(answer.slice(7)) * 1000));
      return { action: 'accept', content: {} };
    }
    throw new Error(`unknown answer ${answer}`);
  });
}

let transport;
if (opts.http) {
  transport = new StreamableHTTPClientTransport(new URL(opts.http), {
    requestInit: { headers: { Authorization: `Bearer ${opts.token}` } },
  });
} else {
  const [command, ...args] = opts.stdio;
  transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'inherit' });
}

await client.connect(transport);
emit({ protocol: client.getNegotiatedProtocolVersion() });
for (let step of opts.steps) {
  if (step === 'list') {
    const tools = await client.listTools();
    emit({ tools: tools.tools });
    continue;
  }
  let giveUpAfter;
  const cancel = /^cancel:([0-9.]+):(.*)$/s.exec(step);
  if (cancel) {
    giveUpAfter = parseFloat(cancel[1]) * 1000;
    step = cancel[2];
  }
  const eq = step.indexOf('=');
  const name = eq < 0 ? step : step.slice(0, eq);
  const args = eq < 0 ? {} : JSON.parse(step.slice(eq + 1) || '{}');
  const options = giveUpAfter === undefined ? {} : { signal: AbortSignal.timeout(giveUpAfter) };
  try {
    const result = await client.callTool({ name, arguments: args }, options);
    emit({ call: name, result });
  } catch (e) {
    if (giveUpAfter !== undefined) emit({ call: name, cancelled: true });
    else emit({ call: name, raised: e?.constructor?.name ?? 'Error', message: String(e?.message ?? e) });
  }
}
await client.close();
