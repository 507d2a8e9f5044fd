import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isExecutableFile, resolveServerBinary } from '../src/binary';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'racelens-bin-'));
}

function writeExe(file: string, mode = 0o755): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, '#!/bin/sh\nexit 0\n');
  fs.chmodSync(file, mode);
  return file;
}

test('finds racelens on PATH, skipping non-executables and directories', { skip: process.platform === 'win32' }, () => {
  const root = tempDir();
  const a = path.join(root, 'a');
  const b = path.join(root, 'b');
  const c = path.join(root, 'c');
  writeExe(path.join(a, 'racelens'), 0o644); // not executable
  fs.mkdirSync(path.join(b, 'racelens'), { recursive: true }); // a directory
  const good = writeExe(path.join(c, 'racelens'));
  const r = resolveServerBinary({ envPath: [path.join(root, 'none'), a, b, c].join(':'), platform: 'linux' });
  assert.deepEqual(r, { kind: 'found', path: good, source: 'PATH' });
  assert.equal(isExecutableFile(path.join(a, 'racelens')), false);
});

test('reports a clear message when racelens is not on PATH', () => {
  const r = resolveServerBinary({ envPath: '/nonexistent-1:/nonexistent-2', platform: 'linux' });
  assert.equal(r.kind, 'missing');
  if (r.kind === 'missing') {
    assert.equal(r.source, 'PATH');
    assert.deepEqual(r.tried, ['/nonexistent-1/racelens', '/nonexistent-2/racelens']);
    assert.match(r.message, /could not find the `racelens` binary on PATH/);
    assert.match(r.message, /racelens\.path/);
  }
});

test('empty PATH is handled', () => {
  const r = resolveServerBinary({ envPath: undefined, platform: 'linux' });
  assert.equal(r.kind, 'missing');
});

test('racelens.path wins over PATH and never falls back to it', { skip: process.platform === 'win32' }, () => {
  const root = tempDir();
  const onPath = writeExe(path.join(root, 'bin', 'racelens'));
  const configured = writeExe(path.join(root, 'custom', 'my-racelens'));
  const found = resolveServerBinary({ configuredPath: configured, envPath: path.dirname(onPath), platform: 'linux' });
  assert.deepEqual(found, { kind: 'found', path: configured, source: 'setting' });

  const missing = resolveServerBinary({
    configuredPath: path.join(root, 'nope'),
    envPath: path.dirname(onPath),
    platform: 'linux',
  });
  assert.equal(missing.kind, 'missing');
  if (missing.kind === 'missing') {
    assert.equal(missing.source, 'setting');
    assert.match(missing.message, /"racelens\.path"/);
    assert.ok(missing.message.includes(path.join(root, 'nope')));
  }
});

test('racelens.path expands ${workspaceFolder}, ~ and resolves relative paths', () => {
  const seen: string[] = [];
  const isExecutable = (f: string) => {
    seen.push(f);
    return true;
  };
  const base = { platform: 'linux' as const, workspaceFolder: '/ws', homeDir: '/home/me', isExecutable };
  assert.equal(
    resolveServerBinary({ ...base, configuredPath: '${workspaceFolder}/target/release/racelens' }).kind,
    'found',
  );
  resolveServerBinary({ ...base, configuredPath: '~/.cargo/bin/racelens' });
  resolveServerBinary({ ...base, configuredPath: 'target/debug/racelens' });
  assert.deepEqual(seen, [
    '/ws/target/release/racelens',
    '/home/me/.cargo/bin/racelens',
    '/ws/target/debug/racelens',
  ]);
});

test('on Windows, PATHEXT extensions are tried', () => {
  const seen: string[] = [];
  const r = resolveServerBinary({
    envPath: 'C:\\tools;D:\\bin',
    platform: 'win32',
    pathExt: '.EXE;.CMD',
    isExecutable: (f) => {
      seen.push(f);
      return f === 'D:\\bin\\racelens.exe';
    },
  });
  assert.deepEqual(r, { kind: 'found', path: 'D:\\bin\\racelens.exe', source: 'PATH' });
  assert.deepEqual(seen, [
    'C:\\tools\\racelens',
    'C:\\tools\\racelens.exe',
    'C:\\tools\\racelens.cmd',
    'D:\\bin\\racelens',
    'D:\\bin\\racelens.exe',
  ]);
});
