// Locating the `racelens` executable.
//
// This module must not import `vscode`: it is unit-tested with plain node.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expandPath } from './settings';

export const BINARY_NAME = 'racelens';

export interface ResolveOptions {
  /** Value of the `racelens.path` setting ('' or undefined when unset). */
  configuredPath?: string;
  /** The PATH environment variable to search. */
  envPath?: string;
  /** Defaults to `process.platform`. */
  platform?: NodeJS.Platform;
  /** Windows PATHEXT; defaults to `.EXE;.CMD;.BAT;.COM`. */
  pathExt?: string;
  /** First workspace folder, for `${workspaceFolder}` and relative settings. */
  workspaceFolder?: string;
  homeDir?: string;
  /** Test hook; defaults to a check for an executable regular file. */
  isExecutable?: (file: string) => boolean;
}

export type Resolution =
  | { kind: 'found'; path: string; source: 'setting' | 'PATH' }
  | { kind: 'missing'; source: 'setting' | 'PATH'; tried: string[]; message: string };

export function isExecutableFile(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) {
      return false;
    }
    if (process.platform === 'win32') {
      return true;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function candidateNames(base: string, platform: NodeJS.Platform, pathExt: string | undefined): string[] {
  if (platform !== 'win32') {
    return [base];
  }
  const exts = (pathExt ?? '.EXE;.CMD;.BAT;.COM')
    .split(';')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (exts.some((e) => base.toLowerCase().endsWith(e.toLowerCase()))) {
    return [base];
  }
  return [base, ...exts.map((e) => base + e.toLowerCase())];
}

/**
 * Finds the server binary: the `racelens.path` setting wins when set (it is
 * never silently replaced by a PATH lookup); otherwise PATH is searched.
 */
export function resolveServerBinary(opts: ResolveOptions): Resolution {
  const platform = opts.platform ?? process.platform;
  const isExec = opts.isExecutable ?? isExecutableFile;
  const pathMod = platform === 'win32' ? path.win32 : path.posix;
  const configured = (opts.configuredPath ?? '').trim();

  if (configured !== '') {
    let file = expandPath(configured, { workspaceFolder: opts.workspaceFolder, homeDir: opts.homeDir });
    if (!pathMod.isAbsolute(file) && opts.workspaceFolder !== undefined) {
      file = pathMod.resolve(opts.workspaceFolder, file);
    }
    const tried = candidateNames(file, platform, opts.pathExt);
    for (const c of tried) {
      if (isExec(c)) {
        return { kind: 'found', path: c, source: 'setting' };
      }
    }
    return {
      kind: 'missing',
      source: 'setting',
      tried,
      message:
        `racelens: the server binary set in "racelens.path" was not found or is not executable: ${file}. ` +
        'Fix the setting or clear it to search PATH.',
    };
  }

  const sep = platform === 'win32' ? ';' : ':';
  const dirs = (opts.envPath ?? '').split(sep).filter((d) => d !== '');
  const tried: string[] = [];
  for (const dir of dirs) {
    for (const name of candidateNames(BINARY_NAME, platform, opts.pathExt)) {
      const c = pathMod.join(dir, name);
      tried.push(c);
      if (isExec(c)) {
        return { kind: 'found', path: c, source: 'PATH' };
      }
    }
  }
  return {
    kind: 'missing',
    source: 'PATH',
    tried,
    message:
      'racelens: could not find the `racelens` binary on PATH. ' +
      'Install it (cargo install --locked --path server/cli) or set "racelens.path" to its location.',
  };
}
