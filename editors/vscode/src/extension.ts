// VS Code entry point: wires the plain modules (binary resolution, settings,
// status model, explain formatting) to the editor and the language client.

import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
} from 'vscode-languageclient/node';
import { resolveServerBinary } from './binary';
import { CPP_GLOB, documentSelector, isCWorkspace, isServedDocument } from './selector';
import { explainRequest, formatExplain, isExplainResult, noRaceMessage } from './explain';
import { rewriteConfigurationResult, settingsFromGetter } from './settings';
import { StatusModel, type ProgressValue } from './status';

export const OPEN_SETTINGS = 'Open Settings';

export interface RacelensApi {
  /** The running language client, if any (for tests and other extensions). */
  readonly client: LanguageClient | undefined;
  readonly status: StatusModel;
  restart(): Promise<void>;
}

/** Does the workspace hold C (some .c file, no C++ source)? */
async function detectCWorkspace(): Promise<boolean> {
  if (vscode.workspace.workspaceFolders === undefined) {
    return false;
  }
  const exclude = '**/{node_modules,.git,target}/**';
  const [c, cpp] = await Promise.all([
    vscode.workspace.findFiles('**/*.c', exclude, 1),
    vscode.workspace.findFiles(CPP_GLOB, exclude, 1),
  ]);
  return isCWorkspace(c.length > 0, cpp.length > 0);
}

function firstWorkspaceFolder(): string | undefined {
  const folders = vscode.workspace.workspaceFolders;
  return folders !== undefined && folders.length > 0 ? folders[0].uri.fsPath : undefined;
}

class Controller implements RacelensApi, vscode.Disposable {
  client: LanguageClient | undefined;
  readonly status = new StatusModel();
  private readonly statusItem: vscode.StatusBarItem;
  private readonly log: vscode.LogOutputChannel;
  private readonly explainChannel: vscode.OutputChannel;
  private starting: Promise<void> | undefined;
  /** Whether `.h` files typed `cpp` are C headers here (decided at start). */
  private cWorkspace = false;

  constructor() {
    this.statusItem = vscode.window.createStatusBarItem('racelens.status', vscode.StatusBarAlignment.Left, 0);
    this.statusItem.name = 'racelens';
    this.statusItem.command = 'racelens.showOutput';
    this.log = vscode.window.createOutputChannel('racelens', { log: true });
    this.explainChannel = vscode.window.createOutputChannel('racelens: explain');
    this.refreshStatus();
    this.statusItem.show();
  }

  refreshStatus(): void {
    this.statusItem.text = this.status.text();
    this.statusItem.tooltip = this.status.tooltip();
  }

  async start(): Promise<void> {
    const config = vscode.workspace.getConfiguration('racelens');
    const workspaceFolder = firstWorkspaceFolder();
    const resolution = resolveServerBinary({
      configuredPath: config.get<string>('path') ?? '',
      envPath: process.env['PATH'],
      pathExt: process.env['PATHEXT'],
      workspaceFolder,
      homeDir: os.homedir(),
    });

    if (resolution.kind === 'missing') {
      this.status.setServerState('missing');
      this.refreshStatus();
      this.log.error(resolution.message);
      if (resolution.tried.length > 0) {
        this.log.info(`looked for: ${resolution.tried.join(', ')}`);
      }
      void vscode.window.showErrorMessage(resolution.message, OPEN_SETTINGS).then((choice) => {
        if (choice === OPEN_SETTINGS) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'racelens.path');
        }
      });
      return;
    }

    this.log.info(`using ${resolution.path} (from ${resolution.source})`);
    const expandCtx = { workspaceFolder, homeDir: os.homedir() };
    const serverOptions: ServerOptions = {
      command: resolution.path,
      args: ['lsp'],
      options: workspaceFolder !== undefined ? { cwd: workspaceFolder } : {},
    };
    this.cWorkspace = await detectCWorkspace();
    await vscode.commands.executeCommand('setContext', 'racelens.cWorkspace', this.cWorkspace);
    const clientOptions: LanguageClientOptions = {
      documentSelector: documentSelector(this.cWorkspace),
      initializationOptions: settingsFromGetter((key) => config.get(key), expandCtx),
      outputChannel: this.log,
      synchronize: { configurationSection: 'racelens' },
      middleware: {
        handleWorkDoneProgress: (token, params, next) => {
          if (this.status.onProgress(token, params as ProgressValue)) {
            this.refreshStatus();
          }
          next(token, params);
        },
        workspace: {
          configuration: async (params, token, next) => {
            const results = await next(params, token);
            if (!Array.isArray(results)) {
              return results;
            }
            return rewriteConfigurationResult(params.items, results, expandCtx);
          },
        },
      },
    };

    const client = new LanguageClient('racelens', 'racelens', serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (this.client !== client) {
        return;
      }
      this.status.setServerState(
        e.newState === State.Running ? 'running' : e.newState === State.Starting ? 'starting' : 'stopped',
      );
      this.refreshStatus();
    });
    this.status.setServerState('starting');
    this.refreshStatus();
    try {
      await client.start();
      if (this.client === client) {
        this.status.setServerState('running');
        this.refreshStatus();
      }
    } catch (err) {
      if (this.client === client) {
        this.status.setServerState('stopped');
        this.refreshStatus();
      }
      const msg = err instanceof Error ? err.message : String(err);
      void vscode.window.showErrorMessage(`racelens: the server failed to start: ${msg}`, OPEN_SETTINGS).then(
        (choice) => {
          if (choice === OPEN_SETTINGS) {
            void vscode.commands.executeCommand('workbench.action.openSettings', 'racelens');
          }
        },
      );
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.dispose(2000);
      } catch (err) {
        this.log.warn(`stopping the server: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    this.status.setServerState('stopped');
    this.refreshStatus();
  }

  restart(): Promise<void> {
    // Serialize restarts so that two quick invocations do not start two servers.
    const run = (this.starting ?? Promise.resolve()).then(async () => {
      await this.stop();
      await this.start();
    });
    this.starting = run.catch(() => undefined);
    return run;
  }

  async explainAtCursor(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (
      editor === undefined ||
      !isServedDocument(editor.document.languageId, editor.document.fileName, this.cWorkspace)
    ) {
      void vscode.window.showInformationMessage('racelens: put the cursor on a C file to explain a race.');
      return;
    }
    const client = this.client;
    if (client === undefined || !client.isRunning()) {
      void vscode.window.showWarningMessage('racelens: the server is not running.');
      return;
    }
    const pos = editor.selection.active;
    const params = explainRequest(editor.document.uri.toString(), { line: pos.line, character: pos.character });
    let result: unknown;
    try {
      result = await client.sendRequest('workspace/executeCommand', params);
    } catch (err) {
      void vscode.window.showErrorMessage(
        `racelens: explain failed: ${err instanceof Error ? err.message : String(err)}`,
      );
      return;
    }
    if (!isExplainResult(result)) {
      void vscode.window.showInformationMessage(noRaceMessage(result));
      return;
    }
    this.explainChannel.clear();
    this.explainChannel.append(formatExplain(result, firstWorkspaceFolder()));
    this.explainChannel.show(true);
  }

  showOutput(): void {
    this.log.show(true);
  }

  dispose(): void {
    void this.stop();
    this.statusItem.dispose();
    this.explainChannel.dispose();
    this.log.dispose();
  }
}

let controller: Controller | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<RacelensApi> {
  const ctl = new Controller();
  controller = ctl;
  context.subscriptions.push(
    ctl,
    vscode.commands.registerCommand('racelens.restartServer', () => ctl.restart()),
    vscode.commands.registerCommand('racelens.explainRace', () => ctl.explainAtCursor()),
    vscode.commands.registerCommand('racelens.showOutput', () => ctl.showOutput()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('racelens.path')) {
        void ctl.restart();
      }
    }),
  );
  await ctl.start();
  return ctl;
}

export async function deactivate(): Promise<void> {
  const ctl = controller;
  controller = undefined;
  if (ctl !== undefined) {
    await ctl.stop();
  }
}
