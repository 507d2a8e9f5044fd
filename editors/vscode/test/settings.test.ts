import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import {
  DEFAULT_SETTINGS,
  expandPath,
  normalizeSettings,
  rewriteConfigurationResult,
  settingsFromGetter,
} from '../src/settings';

test('normalizeSettings fills defaults for an empty or bogus object', () => {
  assert.deepEqual(normalizeSettings(undefined), DEFAULT_SETTINGS);
  assert.deepEqual(normalizeSettings(null), DEFAULT_SETTINGS);
  assert.deepEqual(normalizeSettings({}), DEFAULT_SETTINGS);
  assert.deepEqual(
    normalizeSettings({ enable: 'yes', maySeverity: 'error', configPath: 3, trace: { server: 'loud' } }),
    DEFAULT_SETTINGS,
  );
});

test('normalizeSettings keeps valid values and drops client-only keys', () => {
  const s = normalizeSettings({
    enable: false,
    maySeverity: 'Warning',
    configPath: '/etc/racelens.toml',
    trace: { server: 'verbose' },
    path: '/usr/bin/racelens',
    unknown: 1,
  });
  assert.deepEqual(s, {
    enable: false,
    maySeverity: 'warning',
    configPath: '/etc/racelens.toml',
    trace: { server: 'verbose' },
  });
  assert.equal('path' in s, false);
});

test('normalizeSettings accepts a flat "trace.server" key', () => {
  assert.equal(normalizeSettings({ 'trace.server': 'messages' }).trace.server, 'messages');
});

test('expandPath expands ~, ${userHome} and ${workspaceFolder}, keeps relative paths', () => {
  const ctx = { workspaceFolder: '/ws', homeDir: '/home/u' };
  assert.equal(expandPath('~/r.toml', ctx), path.join('/home/u', 'r.toml'));
  assert.equal(expandPath('~', ctx), '/home/u');
  assert.equal(expandPath('${userHome}/x', ctx), '/home/u/x');
  assert.equal(expandPath('${workspaceFolder}/cfg/racelens.toml', ctx), '/ws/cfg/racelens.toml');
  assert.equal(expandPath('cfg/racelens.toml', ctx), 'cfg/racelens.toml');
  assert.equal(expandPath('  ', ctx), '');
});

test('settingsFromGetter maps VS Code keys to initializationOptions', () => {
  const values: Record<string, unknown> = {
    enable: true,
    maySeverity: 'hint',
    configPath: '${workspaceFolder}/racelens.toml',
    'trace.server': 'messages',
    path: '/opt/racelens',
  };
  const s = settingsFromGetter((k) => values[k], { workspaceFolder: '/proj', homeDir: '/h' });
  assert.deepEqual(s, {
    enable: true,
    maySeverity: 'hint',
    configPath: '/proj/racelens.toml',
    trace: { server: 'messages' },
  });
});

test('rewriteConfigurationResult normalizes only the racelens section', () => {
  const items = [{ section: 'racelens' }, { section: 'editor' }, { section: 'racelens.configPath' }, {}];
  const results = [
    { enable: false, path: '/x', trace: { server: 'off' } },
    { tabSize: 4 },
    '~/r.toml',
    null,
  ];
  const out = rewriteConfigurationResult(items, results, { homeDir: '/h' });
  assert.deepEqual(out[0], { enable: false, maySeverity: 'information', configPath: '', trace: { server: 'off' } });
  assert.deepEqual(out[1], { tabSize: 4 });
  assert.equal(out[2], path.join('/h', 'r.toml'));
  assert.equal(out[3], null);
});
