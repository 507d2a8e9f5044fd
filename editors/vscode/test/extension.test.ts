// Tests activate() with the `vscode` and `vscode-languageclient/node` modules
// replaced by recording fakes (VS Code itself cannot run here).

import { afterEach, beforeEach, test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Module = require('node:module');

type AnyFn = (...args: any[]) => any;

class FakeStatusItem {
  text = '';
  tooltip: unknown = '';
  command: unknown;
  name = '';
  visible = false;
  disposed = false;
  constructor(
    readonly id: string,
    readonly alignment: number,
    readonly priority: number,
  ) {}
  show() {
    this.visible = true;
  }
  hide() {
    this.visible = false;
  }
  dispose() {
    this.disposed = true;
  }
}

class FakeChannel {
  content = '';
  shown = 0;
  lines: string[] = [];
  constructor(
    readonly name: string,
    readonly options: unknown,
  ) {}
  append(s: string) {
    this.content += s;
  }
  appendLine(s: string) {
    this.content += s + '\n';
  }
  clear() {
    this.content = '';
  }
  show() {
    this.shown++;
  }
  dispose() {}
  info(s: string) {
    this.lines.push('info: ' + s);
  }
  warn(s: string) {
    this.lines.push('warn: ' + s);
  }
  error(s: string) {
    this.lines.push('error: ' + s);
  }
}

const State = { Stopped: 1, Running: 2, Starting: 3 } as const;

class FakeClient {
  started = 0;
  disposed = false;
  running = false;
  requests: Array<{ method: string; params: any }> = [];
  private stateListeners: AnyFn[] = [];
  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: any,
    readonly clientOptions: any,
  ) {
    h.clients.push(this);
  }
  onDidChangeState(l: AnyFn) {
    this.stateListeners.push(l);
    return { dispose() {} };
  }
  private fire(oldState: number, newState: number) {
    for (const l of this.stateListeners) {
      l({ oldState, newState });
    }
  }
  async start() {
    this.started++;
    this.fire(State.Stopped, State.Starting);
    if (h.startError !== undefined) {
      this.fire(State.Starting, State.Stopped);
      throw h.startError;
    }
    this.running = true;
    this.fire(State.Starting, State.Running);
  }
  isRunning() {
    return this.running;
  }
  async sendRequest(method: string, params: any) {
    this.requests.push({ method, params });
    return h.explainAnswer;
  }
  async dispose(_timeout?: number) {
    this.disposed = true;
    if (this.running) {
      this.running = false;
      this.fire(State.Running, State.Stopped);
    }
  }
}

class Harness {
  config: Record<string, unknown> = {};
  commands = new Map<string, AnyFn>();
  executed: unknown[][] = [];
  errors: Array<{ message: string; items: string[] }> = [];
  infos: string[] = [];
  warnings: string[] = [];
  errorChoice: string | undefined;
  clients: FakeClient[] = [];
  statusItems: FakeStatusItem[] = [];
  channels: FakeChannel[] = [];
  configListeners: AnyFn[] = [];
  workspaceFolders: Array<{ uri: { fsPath: string } }> | undefined;
  /** Files `workspace.findFiles` finds (relative paths). */
  files: string[] = [];
  contexts: Record<string, unknown> = {};
  activeTextEditor: unknown;
  startError: Error | undefined;
  explainAnswer: unknown = null;
  subscriptions: Array<{ dispose(): unknown }> = [];

  channel(name: string): FakeChannel {
    const c = this.channels.find((x) => x.name === name);
    assert.ok(c, `output channel ${name} was created`);
    return c;
  }
  get statusItem(): FakeStatusItem {
    assert.equal(this.statusItems.length, 1);
    return this.statusItems[0];
  }
}

let h = new Harness();

const vscodeStub = {
  StatusBarAlignment: { Left: 1, Right: 2 },
  window: {
    createStatusBarItem(id: string, alignment: number, priority: number) {
      const item = new FakeStatusItem(id, alignment, priority);
      h.statusItems.push(item);
      return item;
    },
    createOutputChannel(name: string, options?: unknown) {
      const c = new FakeChannel(name, options);
      h.channels.push(c);
      return c;
    },
    showErrorMessage(message: string, ...items: string[]) {
      h.errors.push({ message, items });
      return Promise.resolve(h.errorChoice);
    },
    showInformationMessage(message: string) {
      h.infos.push(message);
      return Promise.resolve(undefined);
    },
    showWarningMessage(message: string) {
      h.warnings.push(message);
      return Promise.resolve(undefined);
    },
    get activeTextEditor() {
      return h.activeTextEditor;
    },
  },
  commands: {
    registerCommand(id: string, fn: AnyFn) {
      assert.equal(h.commands.has(id), false, `command ${id} registered twice`);
      h.commands.set(id, fn);
      return { dispose: () => h.commands.delete(id) };
    },
    executeCommand(...args: unknown[]) {
      if (args[0] === 'setContext') {
        h.contexts[args[1] as string] = args[2];
        return Promise.resolve(undefined);
      }
      h.executed.push(args);
      return Promise.resolve(undefined);
    },
  },
  workspace: {
    getConfiguration(section?: string) {
      assert.equal(section, 'racelens');
      return {
        get<T>(key: string, def?: T): T | undefined {
          return key in h.config ? (h.config[key] as T) : def;
        },
      };
    },
    onDidChangeConfiguration(l: AnyFn) {
      h.configListeners.push(l);
      return { dispose() {} };
    },
    get workspaceFolders() {
      return h.workspaceFolders;
    },
    findFiles(include: string, _exclude?: string, max?: number) {
      const exts = include === '**/*.c' ? ['c'] : include.replace(/^.*\{|\}$/g, '').split(',');
      const found = h.files.filter((f) => exts.includes(f.split('.').pop() ?? ''));
      return Promise.resolve(found.slice(0, max ?? found.length).map((f) => ({ fsPath: f })));
    },
  },
};

const languageClientStub = { LanguageClient: FakeClient, State };

const ModuleAny = Module as unknown as { _load: AnyFn };
const originalLoad = ModuleAny._load;
ModuleAny._load = function (this: unknown, request: string, ...rest: unknown[]) {
  if (request === 'vscode') {
    return vscodeStub;
  }
  if (request === 'vscode-languageclient/node') {
    return languageClientStub;
  }
  return originalLoad.call(this, request, ...rest);
};

// eslint-disable-next-line @typescript-eslint/no-require-imports
const ext = require('../src/extension') as typeof import('../src/extension');

const tick = () => new Promise((resolve) => setImmediate(resolve));

let savedPath: string | undefined;
let tmp: string;
let fakeBinary: string;

beforeEach(() => {
  h = new Harness();
  savedPath = process.env['PATH'];
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'racelens-ext-'));
  fakeBinary = path.join(tmp, 'bin', 'racelens');
  fs.mkdirSync(path.dirname(fakeBinary));
  fs.writeFileSync(fakeBinary, '#!/bin/sh\n');
  fs.chmodSync(fakeBinary, 0o755);
  // An empty PATH directory: only what a test puts there is found.
  fs.mkdirSync(path.join(tmp, 'empty'));
  process.env['PATH'] = path.join(tmp, 'empty');
  h.workspaceFolders = [{ uri: { fsPath: path.join(tmp, 'ws') } }];
});

afterEach(async () => {
  await ext.deactivate();
  for (const s of h.subscriptions) {
    s.dispose();
  }
  process.env['PATH'] = savedPath;
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function activate() {
  const context = { subscriptions: h.subscriptions };
  return ext.activate(context as any);
}

test('activate starts the client with `racelens lsp` from racelens.path and mapped settings', async () => {
  h.config = {
    path: fakeBinary,
    enable: false,
    maySeverity: 'warning',
    configPath: '${workspaceFolder}/racelens.toml',
    'trace.server': 'verbose',
  };
  const api = await activate();

  assert.equal(h.clients.length, 1);
  const client = h.clients[0];
  assert.equal(client.id, 'racelens');
  assert.equal(client.started, 1);
  assert.equal(api.client as unknown, client);
  assert.deepEqual(client.serverOptions, {
    command: fakeBinary,
    args: ['lsp'],
    options: { cwd: path.join(tmp, 'ws') },
  });
  const opts = client.clientOptions;
  assert.deepEqual(opts.documentSelector, [{ scheme: 'file', language: 'c' }]);
  assert.deepEqual(opts.initializationOptions, {
    enable: false,
    maySeverity: 'warning',
    configPath: path.join(tmp, 'ws', 'racelens.toml'),
    trace: { server: 'verbose' },
  });
  assert.deepEqual(opts.synchronize, { configurationSection: 'racelens' });
  assert.equal(opts.outputChannel, h.channel('racelens'));

  for (const id of ['racelens.restartServer', 'racelens.explainRace', 'racelens.showOutput']) {
    assert.ok(h.commands.has(id), `${id} is registered`);
  }
  assert.equal(h.errors.length, 0);
  assert.equal(h.statusItem.text, 'racelens');
  assert.equal(h.statusItem.visible, true);
  assert.equal(h.statusItem.command, 'racelens.showOutput');
});

test('activate finds racelens on PATH when racelens.path is empty', async () => {
  process.env['PATH'] = [path.join(tmp, 'empty'), path.dirname(fakeBinary)].join(path.delimiter);
  await activate();
  assert.equal(h.clients.length, 1);
  assert.equal(h.clients[0].serverOptions.command, fakeBinary);
  assert.deepEqual(h.clients[0].clientOptions.initializationOptions, {
    enable: true,
    maySeverity: 'information',
    configPath: '',
    trace: { server: 'off' },
  });
});

test('a missing binary shows an error with an Open Settings button and starts no client', async () => {
  h.errorChoice = 'Open Settings';
  await activate();
  assert.equal(h.clients.length, 0);
  assert.equal(h.errors.length, 1);
  assert.match(h.errors[0].message, /could not find the `racelens` binary/);
  assert.match(h.errors[0].message, /racelens\.path/);
  assert.deepEqual(h.errors[0].items, ['Open Settings']);
  await tick();
  assert.deepEqual(h.executed, [['workbench.action.openSettings', 'racelens.path']]);
  assert.equal(h.statusItem.text, 'racelens: not found');
  // The commands exist anyway, so the user can fix PATH and restart.
  assert.ok(h.commands.has('racelens.restartServer'));

  process.env['PATH'] = path.dirname(fakeBinary);
  await h.commands.get('racelens.restartServer')!();
  assert.equal(h.clients.length, 1);
  assert.equal(h.clients[0].started, 1);
  assert.equal(h.statusItem.text, 'racelens');
});

test('a wrong racelens.path is reported even when racelens is on PATH', async () => {
  process.env['PATH'] = path.dirname(fakeBinary);
  h.config = { path: path.join(tmp, 'nowhere', 'racelens') };
  await activate();
  assert.equal(h.clients.length, 0);
  assert.equal(h.errors.length, 1);
  assert.match(h.errors[0].message, /"racelens\.path"/);
  await tick();
  assert.deepEqual(h.executed, [], 'no button pressed, no settings opened');
});

test('a server that fails to start is reported and leaves the status stopped', async () => {
  h.config = { path: fakeBinary };
  h.startError = new Error('spawn EACCES');
  await activate();
  assert.equal(h.errors.length, 1);
  assert.match(h.errors[0].message, /failed to start: spawn EACCES/);
  assert.equal(h.statusItem.text, 'racelens: stopped');
});

test('work-done progress drives the status bar through the middleware', async () => {
  h.config = { path: fakeBinary };
  await activate();
  const mw = h.clients[0].clientOptions.middleware;
  const forwarded: unknown[] = [];
  const next = (token: unknown, params: unknown) => forwarded.push([token, params]);

  mw.handleWorkDoneProgress('tok', { kind: 'begin', title: 'racelens: loading workspace', percentage: 0 }, next);
  assert.equal(h.statusItem.text, 'racelens: loading…');
  mw.handleWorkDoneProgress('tok', { kind: 'report', message: '2/4 files', percentage: 50 }, next);
  assert.match(String(h.statusItem.tooltip), /2\/4 files \(50%\)/);
  mw.handleWorkDoneProgress('tok', { kind: 'end' }, next);
  assert.equal(h.statusItem.text, 'racelens');
  assert.equal(forwarded.length, 3, 'VS Code still gets every progress value');
});

test('workspace/configuration answers are normalized for the racelens section', async () => {
  h.config = { path: fakeBinary };
  h.workspaceFolders = [{ uri: { fsPath: '/proj' } }];
  await activate();
  const mw = h.clients[0].clientOptions.middleware;
  const params = { items: [{ section: 'racelens' }, { section: 'files' }] };
  const out = await mw.workspace.configuration(params, {}, async () => [
    { path: '/x/racelens', maySeverity: 'hint', configPath: '${workspaceFolder}/r.toml', trace: { server: 'off' } },
    { exclude: {} },
  ]);
  assert.deepEqual(out, [
    { enable: true, maySeverity: 'hint', configPath: '/proj/r.toml', trace: { server: 'off' } },
    { exclude: {} },
  ]);
});

function editorAt(file: string, line: number, character: number, languageId = 'c') {
  return {
    document: { languageId, uri: { toString: () => 'file://' + file } },
    selection: { active: { line, character } },
  };
}

test('Explain Race Under Cursor sends racelens.explain and shows the schedule', async () => {
  h.config = { path: fakeBinary };
  h.workspaceFolders = [{ uri: { fsPath: '/proj' } }];
  await activate();
  h.activeTextEditor = editorAt('/proj/race.c', 11, 4);
  h.explainAnswer = {
    race: 'data race on `counter`',
    text: 'main writes counter without a lock\nworker writes counter holding m',
    steps: [
      {
        message: 'write in thread `main` holding no lock',
        uri: 'file:///proj/race.c',
        range: { start: { line: 11, character: 4 }, end: { line: 11, character: 13 } },
      },
    ],
  };
  await h.commands.get('racelens.explainRace')!();

  const client = h.clients[0];
  assert.deepEqual(client.requests, [
    {
      method: 'workspace/executeCommand',
      params: {
        command: 'racelens.explain',
        arguments: [{ uri: 'file:///proj/race.c', position: { line: 11, character: 4 } }],
      },
    },
  ]);
  const out = h.channel('racelens: explain');
  assert.equal(out.shown, 1);
  assert.match(out.content, /^racelens: data race on `counter`\n/);
  assert.match(out.content, /main writes counter without a lock\nworker writes counter holding m/);
  assert.match(out.content, /1\. race\.c:12:5 {2}write in thread `main` holding no lock/);
});

test('Explain with no race at the cursor says so', async () => {
  h.config = { path: fakeBinary };
  await activate();
  h.activeTextEditor = editorAt('/proj/race.c', 0, 0);
  h.explainAnswer = null;
  await h.commands.get('racelens.explainRace')!();
  assert.deepEqual(h.infos, ['racelens: no data race at the cursor.']);
  assert.equal(h.channel('racelens: explain').shown, 0);

  h.activeTextEditor = editorAt('/proj/readme.md', 0, 0, 'markdown');
  await h.commands.get('racelens.explainRace')!();
  assert.equal(h.clients[0].requests.length, 1, 'no request for a non-C editor');
});

test('Restart Server disposes the old client and starts a new one', async () => {
  h.config = { path: fakeBinary };
  await activate();
  const first = h.clients[0];
  await h.commands.get('racelens.restartServer')!();
  assert.equal(first.disposed, true);
  assert.equal(h.clients.length, 2);
  assert.equal(h.clients[1].started, 1);
  assert.equal(h.statusItem.text, 'racelens');

  // Changing racelens.path restarts too; other settings do not.
  const affects = (key: string) => ({ affectsConfiguration: (s: string) => s === key });
  for (const l of h.configListeners) {
    l(affects('racelens.maySeverity'));
  }
  await tick();
  assert.equal(h.clients.length, 2);
  for (const l of h.configListeners) {
    l(affects('racelens.path'));
  }
  for (let i = 0; i < 5; i++) {
    await tick();
  }
  assert.equal(h.clients.length, 3);
  assert.equal(h.clients[1].disposed, true);
});

test('deactivate stops the client', async () => {
  h.config = { path: fakeBinary };
  await activate();
  await ext.deactivate();
  assert.equal(h.clients[0].disposed, true);
  assert.equal(h.statusItem.text, 'racelens: stopped');
});

test('.h files typed cpp are served in a C workspace, not in a C++ one', async () => {
  h.config = { path: fakeBinary };
  h.files = ['main.c', 'util.h'];
  const api = await activate();
  assert.deepEqual(h.clients[0].clientOptions.documentSelector, [
    { scheme: 'file', language: 'c' },
    { scheme: 'file', language: 'cpp', pattern: '**/*.h' },
  ]);
  assert.equal(h.contexts['racelens.cWorkspace'], true);
  h.files = ['main.c', 'util.h', 'app.cpp'];
  await api.restart();
  assert.deepEqual(h.clients[1].clientOptions.documentSelector, [{ scheme: 'file', language: 'c' }]);
  assert.equal(h.contexts['racelens.cWorkspace'], false);
});
