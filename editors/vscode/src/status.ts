// The status bar model: server state plus work-done progress reported by the
// server (`$/progress`) turned into the text shown in the status bar.
//
// This module must not import `vscode`: it is unit-tested with plain node.

export type ServerState = 'starting' | 'running' | 'stopped' | 'missing';

export type ProgressToken = number | string;

export interface ProgressValue {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  message?: string;
  percentage?: number;
}

interface ActiveProgress {
  title: string;
  message?: string;
  percentage?: number;
}

export const IDLE_TEXT = 'racelens';
export const LOADING_TEXT = 'racelens: loading…';
export const STARTING_TEXT = 'racelens: starting…';
export const STOPPED_TEXT = 'racelens: stopped';
export const MISSING_TEXT = 'racelens: not found';

export class StatusModel {
  private state: ServerState = 'starting';
  private readonly active = new Map<ProgressToken, ActiveProgress>();

  setServerState(state: ServerState): void {
    this.state = state;
    if (state !== 'running') {
      this.active.clear();
    }
  }

  get serverState(): ServerState {
    return this.state;
  }

  /** Feeds one `$/progress` value; returns true when the status text may have changed. */
  onProgress(token: ProgressToken, value: ProgressValue): boolean {
    switch (value.kind) {
      case 'begin':
        this.active.set(token, { title: value.title ?? '', message: value.message, percentage: value.percentage });
        return true;
      case 'report': {
        const cur = this.active.get(token);
        if (cur === undefined) {
          return false;
        }
        if (value.message !== undefined) {
          cur.message = value.message;
        }
        if (value.percentage !== undefined) {
          cur.percentage = value.percentage;
        }
        return true;
      }
      case 'end':
        return this.active.delete(token);
      default:
        return false;
    }
  }

  get busy(): boolean {
    return this.active.size > 0;
  }

  text(): string {
    switch (this.state) {
      case 'missing':
        return MISSING_TEXT;
      case 'stopped':
        return STOPPED_TEXT;
      case 'starting':
        return STARTING_TEXT;
      case 'running':
        return this.busy ? LOADING_TEXT : IDLE_TEXT;
    }
  }

  tooltip(): string {
    switch (this.state) {
      case 'missing':
        return 'racelens: the server binary was not found (see the "racelens.path" setting)';
      case 'stopped':
        return 'racelens: the server is not running; run "racelens: Restart Server"';
      case 'starting':
        return 'racelens: starting the server';
      case 'running':
        break;
    }
    if (!this.busy) {
      return 'racelens: idle; click to show the server log';
    }
    const parts: string[] = [];
    for (const p of this.active.values()) {
      let s = p.title !== '' ? p.title : 'racelens: working';
      if (p.message !== undefined && p.message !== '') {
        s += ` — ${p.message}`;
      }
      if (p.percentage !== undefined) {
        s += ` (${Math.round(p.percentage)}%)`;
      }
      parts.push(s);
    }
    return parts.join('\n');
  }
}
