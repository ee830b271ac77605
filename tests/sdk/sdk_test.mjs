// The Claude Agent SDK (the real npm package, pinned in package-lock.json) driving troupe with
// no wrapper: `pathToClaudeCodeExecutable` is the troupe binary, `executableArgs` is ['run'].
// The model is the fake Anthropic server of tests/support on 127.0.0.1.
//
//   node sdk_test.mjs TROUPE_BINARY "CASE"
import { createSdkMcpServer, query, tool } from '@anthropic-ai/claude-agent-sdk';
import { z } from 'zod';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const fakeServer = path.join(here, '..', 'support', 'fake_model_server.py');
const [troupe, caseName] = process.argv.slice(2);

function check(condition, what, detail) {
  if (!condition) {
    const extra = detail === undefined ? '' : `\n  got: ${JSON.stringify(detail, null, 1).slice(0, 3000)}`;
    throw new Error(`FAILED: ${what}${extra}`);
  }
}

// One scenario's world: a workspace, troupe's home, and the fake model with its script.
class World {
  constructor(replies) {
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), 'troupe-sdk-'));
    this.workspace = path.join(this.root, 'work');
    fs.mkdirSync(this.workspace);
    this.record = path.join(this.root, 'requests.jsonl');
    const script = path.join(this.root, 'script.json');
    fs.writeFileSync(script, JSON.stringify(replies));
    this.server = spawn('python3', [fakeServer, '--script', script, '--record', this.record],
                        { stdio: ['pipe', 'pipe', 'inherit'] });
    this.port = new Promise((resolve, reject) => {
      let seen = '';
      this.server.stdout.on('data', (chunk) => {
        seen += chunk;
        const m = /PORT (\d+)/.exec(seen);
        if (m) resolve(Number(m[1]));
      });
      this.server.on('exit', () => reject(new Error('the fake model server did not start')));
    });
  }

  async options(extra = {}) {
    const port = await this.port;
    return {
      pathToClaudeCodeExecutable: troupe,
      executableArgs: ['run'],
      cwd: this.workspace,
      model: 'anthropic/claude-sonnet-4-5',
      env: {
        PATH: process.env.PATH,
        HOME: this.root,
        XDG_CONFIG_HOME: path.join(this.root, 'config'),
        TROUPE_HOME: path.join(this.root, 'home'),
        ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
        ANTHROPIC_API_KEY: 'test-key',
      },
      stderr: (text) => process.stderr.write(`[troupe] ${text}`),
      ...extra,
    };
  }

  requests() {
    if (!fs.existsSync(this.record)) return [];
    return fs.readFileSync(this.record, 'utf8').trim().split('\n').filter(Boolean)
      .map((line) => JSON.parse(line)).filter((r) => !r.naming);
  }

  close() {
    this.server.kill();
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

// Every message of a query, and the error it ended with (null when none).
async function collect(q, onMessage = () => {}) {
  const messages = [];
  let error = null;
  try {
    for await (const m of q) {
      messages.push(m);
      await onMessage(m, messages);
    }
  } catch (e) {
    error = e;
  }
  return { messages, error };
}

const toolResults = (messages) => messages.filter((m) => m.type === 'user' && Array.isArray(m.message?.content))
  .flatMap((m) => m.message.content.filter((b) => b.type === 'tool_result'));

// A channel of user messages the test feeds while the query runs.
function inputChannel() {
  const queue = [];
  let wake = null;
  let closed = false;
  return {
    push(text) {
      queue.push({ type: 'user', message: { role: 'user', content: text }, parent_tool_use_id: null, session_id: '' });
      wake?.();
    },
    close() { closed = true; wake?.(); },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queue.length) yield queue.shift();
        if (closed) return;
        await new Promise((resolve) => { wake = resolve; });
        wake = null;
      }
    },
  };
}

const cases = {
  async 'a string prompt'() {
    const world = new World([{ text: 'Hello from the fake model.' }]);
    try {
      const { messages, error } = await collect(query({ prompt: 'say hello', options: await world.options() }));
      check(error === null, 'the query ends without an error', String(error));
      const init = messages.find((m) => m.type === 'system' && m.subtype === 'init');
      check(init, 'a system/init message comes first', messages);
      check(init.tools.includes('Bash') && init.tools.includes('Read'), 'init names the tools as Claude Code does', init.tools);
      check(typeof init.uuid === 'string' && init.permissionMode === 'default', 'init has uuid and permissionMode', init);
      const assistant = messages.find((m) => m.type === 'assistant');
      check(assistant?.message.content[0].text === 'Hello from the fake model.', 'the reply arrives', assistant);
      check(typeof assistant.uuid === 'string' && assistant.parent_tool_use_id === null, 'messages carry uuid and parent_tool_use_id', assistant);
      const result = messages.at(-1);
      check(result.type === 'result' && result.subtype === 'success' && !result.is_error, 'the last message is a success result', result);
      check(result.result === 'Hello from the fake model.', 'the result holds the answer', result);
      check(typeof result.total_cost_usd === 'number' && typeof result.duration_api_ms === 'number', 'cost and API time are numbers', result);
      check(result.modelUsage && typeof result.modelUsage === 'object', 'modelUsage is there', result);
      check(messages.filter((m) => m.type === 'result').length === 1, 'one result for one turn', messages);
    } finally { world.close(); }
  },

  async 'streaming input over two turns'() {
    const world = new World([{ text: 'First answer.' }, { text: 'Second answer.' }]);
    try {
      const input = inputChannel();
      input.push('first question');
      let results = 0;
      const { messages, error } = await collect(query({ prompt: input, options: await world.options() }), (m) => {
        if (m.type !== 'result') return;
        results += 1;
        if (results === 1) input.push('second question');
        else input.close();
      });
      check(error === null, 'no error', String(error));
      const resultMessages = messages.filter((m) => m.type === 'result');
      check(resultMessages.length === 2, 'a result per turn', resultMessages);
      check(resultMessages[1].result === 'Second answer.', 'the second turn answers the second message', resultMessages[1]);
      const second = world.requests()[1];
      const said = JSON.stringify(second.body.messages);
      check(said.includes('first question') && said.includes('First answer.') && said.includes('second question'),
            'the second turn sees the first one', second.body.messages);
    } finally { world.close(); }
  },

  async 'interrupt mid-tool'() {
    const world = new World([
      { tool_calls: [{ name: 'shell', input: { command: 'sleep 30' } }] },
      { text: 'after the interrupt' },
    ]);
    try {
      const input = inputChannel();
      input.push('run something slow');
      let q;
      let interruptedAt = 0;
      const started = Date.now();
      q = query({ prompt: input, options: await world.options({ permissionMode: 'bypassPermissions' }) });
      const { messages, error } = await collect(q, async (m) => {
        if (m.type === 'assistant' && m.message.content.some((b) => b.type === 'tool_use')) {
          await new Promise((r) => setTimeout(r, 500));
          interruptedAt = Date.now();
          await q.interrupt();
        }
        if (m.type === 'result') input.close();
      });
      check(error === null || /error result/.test(String(error)), 'the query ends', String(error));
      check(interruptedAt > 0, 'the tool call was seen');
      const result = messages.find((m) => m.type === 'result');
      check(result, 'the interrupted turn has a result', messages);
      check(Date.now() - started < 20000, 'the 30 s command did not run to its end');
      const results = toolResults(messages);
      check(results.length === 1 && /interrupt/i.test(JSON.stringify(results[0].content)),
            'the call is answered as interrupted', results);
    } finally { world.close(); }
  },

  async 'canUseTool allows one call and denies another'() {
    const world = new World([
      { tool_calls: [{ name: 'shell', input: { command: 'echo first' } }] },
      { tool_calls: [{ name: 'shell', input: { command: 'rm -rf somewhere' } }] },
      { text: 'done' },
    ]);
    try {
      const asked = [];
      const canUseTool = async (toolName, input) => {
        asked.push({ toolName, input });
        if (input.command.startsWith('echo')) return { behavior: 'allow', updatedInput: { ...input, command: 'echo edited-by-client' } };
        return { behavior: 'deny', message: 'rm is not for you' };
      };
      const input = inputChannel();
      input.push('do two things');
      const { messages, error } = await collect(query({ prompt: input, options: await world.options({ canUseTool }) }), (m) => {
        if (m.type === 'result') input.close();
      });
      check(error === null, 'no error', String(error));
      check(asked.length === 2 && asked.every((a) => a.toolName === 'Bash'), 'both calls were asked as Bash', asked);
      const results = toolResults(messages);
      check(results.length === 2, 'both calls answered', results);
      check(JSON.stringify(results[0].content).includes('edited-by-client'), 'the allowed call ran as the client edited it', results[0]);
      check(JSON.stringify(results[1].content).includes('rm is not for you'), 'the denied call carries the message', results[1]);
      check(messages.at(-1).result === 'done', 'the turn went on after the denial', messages.at(-1));
    } finally { world.close(); }
  },

  async 'an SDK hook callback blocks a Bash call'() {
    const world = new World([
      { tool_calls: [{ name: 'shell', input: { command: 'echo hi > made-by-model.txt' } }] },
      { text: 'ok' },
    ]);
    try {
      const seen = [];
      const hooks = {
        PreToolUse: [{
          matcher: 'Bash',
          hooks: [async (hookInput) => {
            seen.push(hookInput);
            return { decision: 'block', reason: 'blocked by the SDK hook' };
          }],
        }],
      };
      const input = inputChannel();
      input.push('write a file');
      const { messages, error } = await collect(
        query({ prompt: input, options: await world.options({ hooks, permissionMode: 'bypassPermissions' }) }),
        (m) => { if (m.type === 'result') input.close(); });
      check(error === null, 'no error', String(error));
      check(seen.length === 1 && seen[0].tool_name === 'Bash' && seen[0].tool_input.command.includes('echo hi'),
            'the hook saw the call in Claude Code names', seen);
      check(!fs.existsSync(path.join(world.workspace, 'made-by-model.txt')), 'the blocked command did not run');
      const results = toolResults(messages);
      check(JSON.stringify(results).includes('blocked by the SDK hook'), 'the model reads why', results);
    } finally { world.close(); }
  },

  async 'setPermissionMode and setModel mid-session'() {
    const world = new World([
      { text: 'first' },
      { tool_calls: [{ name: 'shell', input: { command: 'touch planned.txt' } }] },
      { text: 'here is my plan' },
    ]);
    try {
      const input = inputChannel();
      input.push('first turn');
      let q;
      let modeAnswer;
      q = query({ prompt: input, options: await world.options({ permissionMode: 'bypassPermissions' }) });
      let results = 0;
      const { messages, error } = await collect(q, async (m) => {
        if (m.type !== 'result') return;
        results += 1;
        if (results === 1) {
          modeAnswer = await q.setPermissionMode('plan');
          let refused = null;
          try { await q.setModel('nosuchprovider/model'); } catch (e) { refused = e; }
          check(refused && /nosuchprovider/.test(String(refused)), 'a model that cannot be used is refused with the reason', String(refused));
          await q.setModel('anthropic/claude-haiku-4-5');
          input.push('now plan');
        } else {
          input.close();
        }
      });
      check(error === null, 'no error', String(error));
      check(!fs.existsSync(path.join(world.workspace, 'planned.txt')), 'plan mode refused the write');
      const requests = world.requests();
      check(requests.length === 3, 'three model calls', requests.map((r) => r.body?.model));
      check(requests[0].body.model === 'claude-sonnet-4-5' && requests[1].body.model === 'claude-haiku-4-5',
            'the second turn asked the new model', requests.map((r) => r.body.model));
      const results2 = toolResults(messages);
      check(/plan/i.test(JSON.stringify(results2[0].content)), 'the refusal names plan mode', results2);
      void modeAnswer;
    } finally { world.close(); }
  },

  async 'a subagent streams under its task call'() {
    const world = new World([
      { tool_calls: [{ name: 'task', input: { prompt: 'look around', description: 'look around' } }] },
      { text: 'The child looked around.' },
      { text: 'The parent is done.' },
    ]);
    try {
      const { messages, error } = await collect(query({
        prompt: 'delegate', options: await world.options({ permissionMode: 'bypassPermissions' }),
      }));
      check(error === null, 'no error', String(error));
      const launch = messages.find((m) => m.type === 'assistant' && m.parent_tool_use_id === null &&
        m.message.content.some((b) => b.type === 'tool_use' && b.name === 'Task'));
      check(launch, 'the parent launches the subagent with the Task tool', messages);
      const callId = launch.message.content.find((b) => b.type === 'tool_use').id;
      const child = messages.filter((m) => m.parent_tool_use_id === callId);
      check(child.some((m) => m.type === 'assistant' && m.message.content[0].text === 'The child looked around.'),
            "the subagent's reply carries the task call's id", messages);
      check(child.every((m) => m.session_id === launch.session_id), "under the parent's session id", child);
      check(messages.filter((m) => m.type === 'result').length === 1, "the subagent's end is no result of the parent's", messages);
      check(messages.at(-1).result === 'The parent is done.', 'the parent finishes', messages.at(-1));
    } finally { world.close(); }
  },

  async "the SDK's agents are task types"() {
    const world = new World([
      { tool_calls: [{ name: 'task', input: { prompt: 'review it', description: 'review', subagent_type: 'reviewer' } }] },
      { text: 'Looks fine.' },
      { text: 'Reviewed.' },
    ]);
    try {
      const agents = { reviewer: { description: 'Reviews code', prompt: 'You are the strict reviewer.', tools: ['Read', 'Grep'] } };
      const { messages, error } = await collect(query({
        prompt: 'get a review', options: await world.options({ agents, permissionMode: 'bypassPermissions' }),
      }));
      check(error === null, 'no error', String(error));
      const requests = world.requests();
      check(requests.length === 3, 'parent, child, parent', requests.length);
      const parentTools = JSON.stringify(requests[0].body.tools);
      check(parentTools.includes('reviewer'), "the task tool lists the client's type", requests[0].body.tools);
      const child = requests[1].body;
      check(JSON.stringify(child.system).includes('You are the strict reviewer.'), "the child runs the type's prompt", child.system);
      const childTools = child.tools.map((t) => t.name).sort();
      check(JSON.stringify(childTools) === JSON.stringify(['grep', 'read']), "the child has the type's tools only", childTools);
      check(messages.at(-1).result === 'Reviewed.', 'the parent finishes', messages.at(-1));
    } finally { world.close(); }
  },

  async 'a slash command gets a result'() {
    const world = new World([]);
    try {
      const { messages, error } = await collect(query({ prompt: '/tokens', options: await world.options() }));
      check(error === null, 'no error, no hang', String(error));
      const result = messages.find((m) => m.type === 'result');
      check(result && result.subtype === 'success' && result.num_turns === 0 && result.result === '',
            'a model-less success result', result);
      check(world.requests().length === 0, 'no model call');
    } finally { world.close(); }
  },

  async "stdin's end refuses what is still to be asked, and SIGTERM ends a client run"() {
    // The raw protocol, no SDK: a client that closes stdin at once cannot answer can_use_tool.
    const world = new World([
      { tool_calls: [{ name: 'shell', input: { command: 'touch asked.txt' } }] },
      { text: 'gave up' },
      { tool_calls: [{ name: 'shell', input: { command: 'sleep 30' } }] },
    ]);
    try {
      const options = await world.options();
      const args = ['run', '--model', options.model, '--input-format', 'stream-json',
                    '--output-format', 'stream-json', '--permission-prompt-tool', 'stdio'];
      const run = (then) => new Promise((resolve) => {
        const child = spawn(troupe, args, { cwd: world.workspace, env: options.env, stdio: ['pipe', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (d) => { out += d; then(child, out); });
        child.on('exit', (code, signal) => resolve({ code, signal, out }));
        child.stdin.write(JSON.stringify({ type: 'user', message: { role: 'user', content: 'go' } }) + '\n');
        if (then.closeAtOnce) child.stdin.end();
      });
      const closeAtOnce = Object.assign(() => {}, { closeAtOnce: true });
      const first = await run(closeAtOnce);
      check(first.code === 0, 'the run ends by itself', first);
      check(/client's input (has )?ended/.test(first.out), 'the call is refused: nobody can answer', first.out);
      check(!fs.existsSync(path.join(world.workspace, 'asked.txt')), 'the call did not run');
      let killed = false;
      const started = Date.now();
      const second = await run((child, out) => {
        if (!killed && out.includes('"tool_use"')) { killed = true; setTimeout(() => child.kill('SIGTERM'), 300); }
      });
      check(killed && second.code === 130, 'SIGTERM ends the run with 130', second);
      check(Date.now() - started < 15000, 'at once, not when stdin ends');
    } finally { world.close(); }
  },

  async "canUseTool is asked about a subagent's calls"() {
    const world = new World([
      { tool_calls: [{ name: 'task', input: { prompt: 'make a file', description: 'make a file' } }] },
      { tool_calls: [{ name: 'shell', input: { command: 'echo from-the-child' } }] },
      { text: 'child done' },
      { text: 'parent done' },
    ]);
    try {
      const asked = [];
      const canUseTool = async (toolName, input) => { asked.push(toolName); return { behavior: 'allow', updatedInput: input }; };
      const input = inputChannel();
      input.push('delegate');
      const { messages, error } = await collect(query({ prompt: input, options: await world.options({ canUseTool }) }), (m) => {
        if (m.type === 'result') input.close();
      });
      check(error === null, 'no error', String(error));
      check(asked.includes('Bash'), "the subagent's Bash call was asked", asked);
      check(JSON.stringify(messages).includes('from-the-child'), "the subagent's call ran", messages);
      check(messages.at(-1).result === 'parent done', 'the parent finishes', messages.at(-1));
    } finally { world.close(); }
  },

  async 'a message troupe cannot take gets an error result'() {
    const world = new World([]);
    try {
      const input = inputChannel();
      const image = { type: 'user', parent_tool_use_id: null, session_id: '',
        message: { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] } };
      const prompt = { async *[Symbol.asyncIterator]() { yield image; } };
      const { messages } = await collect(query({ prompt, options: await world.options() }));
      void input;
      const result = messages.find((m) => m.type === 'result');
      check(result && result.is_error && /image/.test(result.errors.join(' ')), 'an error result names the block', messages);
    } finally { world.close(); }
  },

  async 'maxTurns reached'() {
    const world = new World([
      { tool_calls: [{ name: 'shell', input: { command: 'echo 1' } }] },
      { tool_calls: [{ name: 'shell', input: { command: 'echo 2' } }] },
      { tool_calls: [{ name: 'shell', input: { command: 'echo 3' } }] },
    ]);
    try {
      const { messages, error } = await collect(query({
        prompt: 'loop', options: await world.options({ maxTurns: 2, permissionMode: 'bypassPermissions' }),
      }));
      const result = messages.find((m) => m.type === 'result');
      check(result && result.subtype === 'error_max_turns' && result.is_error, 'an error_max_turns result', result);
      check(Array.isArray(result.errors) && result.errors.length > 0, 'errors is an array of strings', result);
      check(error === null || !/TypeError/.test(String(error)), 'no TypeError in the SDK', String(error));
      check(error === null || /error result/.test(String(error)), 'the SDK reports the error result', String(error));
    } finally { world.close(); }
  },

  async 'an error result'() {
    const world = new World([{ status: 400, error_message: 'the fake model refuses this request' }]);
    try {
      const { messages, error } = await collect(query({ prompt: 'hi', options: await world.options() }));
      const result = messages.find((m) => m.type === 'result');
      check(result && result.is_error && result.subtype === 'error_during_execution', 'an error result', result);
      check(Array.isArray(result.errors) && /refuses this request|400/.test(result.errors.join(' ')),
            'errors says what went wrong', result);
      check(error && /error result/.test(String(error)) && !/TypeError/.test(String(error)),
            'the SDK throws its error-result error', String(error));
    } finally { world.close(); }
  },

  async 'a stock Claude Code hook script blocks rm'() {
    const world = new World([
      { tool_calls: [{ name: 'shell', input: { command: 'rm -f keep.txt' } }] },
      { tool_calls: [{ name: 'shell', input: { command: 'echo still here' } }] },
      { text: 'ok' },
    ]);
    try {
      fs.writeFileSync(path.join(world.workspace, 'keep.txt'), 'keep me');
      const guard = path.join(world.root, 'guard.sh');
      fs.writeFileSync(guard, [
        '#!/bin/bash',
        'input=$(cat)',
        'tool=$(echo "$input" | jq -r .tool_name)',
        'cmd=$(echo "$input" | jq -r .tool_input.command)',
        'if [ "$tool" = "Bash" ] && echo "$cmd" | grep -qw rm; then echo "rm is blocked" >&2; exit 2; fi',
        'exit 0', ''].join('\n'), { mode: 0o755 });
      const settings = path.join(world.root, 'settings.json');
      fs.writeFileSync(settings, JSON.stringify({
        hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: guard }] }] },
      }));
      const { messages, error } = await collect(query({
        prompt: 'clean up', options: await world.options({ settings, permissionMode: 'bypassPermissions' }),
      }));
      check(error === null, 'no error', String(error));
      check(fs.existsSync(path.join(world.workspace, 'keep.txt')), 'rm did not run');
      const results = toolResults(messages);
      check(JSON.stringify(results[0]).includes('rm is blocked'), 'the model reads the hook\'s reason', results);
      check(JSON.stringify(results[1]).includes('still here'), 'other commands run', results);
    } finally { world.close(); }
  },

  async 'an SDK MCP server tool is called through mcp_message'() {
    const world = new World([
      { tool_calls: [{ name: 'mcp__calc__add', input: { a: 2, b: 40 } }] },
      { text: 'done' },
    ]);
    try {
      const calls = [];
      const calc = createSdkMcpServer({
        name: 'calc',
        version: '1.0.0',
        tools: [tool('add', 'Adds two numbers', { a: z.number(), b: z.number() }, async ({ a, b }) => {
          calls.push([a, b]);
          return { content: [{ type: 'text', text: `sum: ${a + b}` }] };
        })],
      });
      let statuses = null;
      const q = query({ prompt: 'add them', options: await world.options({
        mcpServers: { calc }, allowedTools: ['mcp__calc__add'] }) });
      const { messages, error } = await collect(q, async (m) => {
        if (m.type === 'system' && m.subtype === 'init') statuses = await q.mcpServerStatus();
      });
      check(error === null, 'no error', String(error));
      const init = messages.find((m) => m.type === 'system' && m.subtype === 'init');
      check(init.mcp_servers.some((s) => s.name === 'calc' && s.status === 'connected'),
            'init lists the SDK server as connected', init.mcp_servers);
      check(init.tools.includes('mcp__calc__add'), 'init names its tool', init.tools);
      const offered = (world.requests()[0].body.tools || []).map((t) => t.name);
      check(offered.includes('mcp__calc__add'), 'the model is offered the tool with its schema', offered);
      check(calls.length === 1 && calls[0][0] === 2 && calls[0][1] === 40, 'the SDK ran the handler once', calls);
      const results = toolResults(messages);
      check(JSON.stringify(results[0]).includes('sum: 42') && !results[0].is_error,
            'the model reads the handler\'s answer', results);
      check(Array.isArray(statuses) && statuses.some((s) => s.name === 'calc' && s.status === 'connected' &&
                                                     s.tools.some((t) => t.name === 'add')),
            'mcpServerStatus() reports the server and its tools', statuses);
    } finally { world.close(); }
  },

  async 'a stdio MCP server from mcpServers is started and its call allowed by canUseTool'() {
    const world = new World([
      { tool_calls: [{ name: 'mcp__probe__echo', input: { text: 'hello over stdio' } }] },
      { text: 'done' },
    ]);
    try {
      const server = path.join(here, '..', 'support', 'mcp_stdio_server.py');
      const asked = [];
      const { messages, error } = await collect(query({ prompt: 'echo', options: await world.options({
        mcpServers: { probe: { command: 'python3', args: [server] } },
        canUseTool: async (name, input) => { asked.push(name); return { behavior: 'allow', updatedInput: input }; },
      }) }));
      check(error === null, 'no error', String(error));
      check(asked.includes('mcp__probe__echo'), 'canUseTool was asked about the MCP call', asked);
      const results = toolResults(messages);
      check(JSON.stringify(results[0]).includes('hello over stdio') && !results[0].is_error,
            'the server answered the call', results);
    } finally { world.close(); }
  },
};

const run = cases[caseName];
if (!run) {
  console.error(`unknown case '${caseName}'; known: ${Object.keys(cases).join(', ')}`);
  process.exit(2);
}
const timer = setTimeout(() => { console.error(`FAILED: '${caseName}' took over 90 s`); process.exit(1); }, 90000);
try {
  await run();
  console.log(`ok: ${caseName}`);
  clearTimeout(timer);
  process.exit(0);
} catch (e) {
  console.error(e.stack || String(e));
  process.exit(1);
}
