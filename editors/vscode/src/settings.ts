// Settings of the `racelens` section, as the server receives them through
// `initializationOptions` and `workspace/configuration`.
//
// This module must not import `vscode`: it is unit-tested with plain node.

import * as os from 'node:os';
import * as path from 'node:path';

export type MaySeverity = 'information' | 'warning' | 'hint';
export type TraceLevel = 'off' | 'messages' | 'verbose';

/** The settings object sent to the server (the `racelens` section minus client-only keys). */
export interface ServerSettings {
  enable: boolean;
  maySeverity: MaySeverity;
  configPath: string;
  trace: { server: TraceLevel };
}

export const DEFAULT_SETTINGS: Readonly<ServerSettings> = Object.freeze({
  enable: true,
  maySeverity: 'information',
  configPath: '',
  trace: Object.freeze({ server: 'off' }) as { server: TraceLevel },
});

const MAY_SEVERITIES: readonly MaySeverity[] = ['information', 'warning', 'hint'];
const TRACE_LEVELS: readonly TraceLevel[] = ['off', 'messages', 'verbose'];

/** Reads one key of the `racelens` section, e.g. `get('trace.server')`. */
export type ConfigGetter = (key: string) => unknown;

export interface ExpandContext {
  /** File-system path of the first workspace folder, if any. */
  workspaceFolder?: string;
  /** Home directory used for `~` expansion; defaults to `os.homedir()`. */
  homeDir?: string;
}

/**
 * Expands `${workspaceFolder}`, `${userHome}` and a leading `~` in a path
 * setting. Relative paths are left relative: the server resolves them
 * against the workspace root.
 */
export function expandPath(value: string, ctx: ExpandContext = {}): string {
  let out = value.trim();
  if (out === '') {
    return out;
  }
  const home = ctx.homeDir ?? os.homedir();
  if (ctx.workspaceFolder !== undefined) {
    out = out.split('${workspaceFolder}').join(ctx.workspaceFolder);
  }
  out = out.split('${userHome}').join(home);
  if (out === '~') {
    out = home;
  } else if (out.startsWith('~/') || out.startsWith('~\\')) {
    out = path.join(home, out.slice(2));
  }
  return out;
}

function pickEnum<T extends string>(value: unknown, allowed: readonly T[], fallback: T): T {
  if (typeof value === 'string') {
    const lower = value.trim().toLowerCase() as T;
    if (allowed.includes(lower)) {
      return lower;
    }
  }
  return fallback;
}

/**
 * Turns a raw `racelens` settings object (as `workspace.getConfiguration()`
 * returns it, possibly partial or with wrong types) into the exact shape the
 * server expects. Unknown keys, including the client-only `path`, are dropped.
 */
export function normalizeSettings(raw: unknown, ctx: ExpandContext = {}): ServerSettings {
  const obj = (raw !== null && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const traceRaw = obj['trace'];
  let trace: unknown;
  if (traceRaw !== null && typeof traceRaw === 'object') {
    trace = (traceRaw as Record<string, unknown>)['server'];
  } else {
    trace = obj['trace.server'];
  }
  return {
    enable: typeof obj['enable'] === 'boolean' ? (obj['enable'] as boolean) : DEFAULT_SETTINGS.enable,
    maySeverity: pickEnum(obj['maySeverity'], MAY_SEVERITIES, DEFAULT_SETTINGS.maySeverity),
    configPath: typeof obj['configPath'] === 'string' ? expandPath(obj['configPath'] as string, ctx) : '',
    trace: { server: pickEnum(trace, TRACE_LEVELS, DEFAULT_SETTINGS.trace.server) },
  };
}

/** Builds the server settings from a key getter over the `racelens` section. */
export function settingsFromGetter(get: ConfigGetter, ctx: ExpandContext = {}): ServerSettings {
  return normalizeSettings(
    {
      enable: get('enable'),
      maySeverity: get('maySeverity'),
      configPath: get('configPath'),
      trace: { server: get('trace.server') },
    },
    ctx,
  );
}

/**
 * Post-processes the answer to a `workspace/configuration` request: every
 * item that asked for the whole `racelens` section gets the normalized
 * settings, other items are passed through untouched.
 */
export function rewriteConfigurationResult(
  items: ReadonlyArray<{ section?: string | null }>,
  results: unknown[],
  ctx: ExpandContext = {},
): unknown[] {
  return results.map((value, i) => {
    const section = items[i]?.section;
    if (section === 'racelens') {
      return normalizeSettings(value, ctx);
    }
    if (section === 'racelens.configPath' && typeof value === 'string') {
      return expandPath(value, ctx);
    }
    return value;
  });
}
