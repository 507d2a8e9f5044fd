#!/usr/bin/env python3
"""A stand-in for `racelens lsp` that speaks just enough of the racelens
contract to test the Neovim plug-in without the Rust server.

It negotiates the position encoding like the real server (utf-8 when the
client offers it in general.positionEncodings or clangd's offsetEncoding),
keeps documents with incremental sync, flags every `counter++` that is not
between pthread_mutex_lock(&m) and pthread_mutex_unlock(&m) as a race when
some other access holds `m`, offers a "Guard with `m`" quick fix that
rewrites the whole line (so a wrong encoding garbles the text), answers
`racelens.explain`, asks for `workspace/configuration` and reports
`$/progress`.

Usage: mock_server.py lsp   (stdio). Log: $RACELENS_MOCK_LOG if set.
"""

import json
import os
import re
import sys

LOG = os.environ.get("RACELENS_MOCK_LOG")


def log(*args):
    if LOG:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(" ".join(str(a) for a in args) + "\n")


class Conn:
    def __init__(self):
        self.inp = sys.stdin.buffer
        self.out = sys.stdout.buffer
        self.next_id = 1000
        self.pending = {}

    def read(self):
        headers = {}
        while True:
            line = self.inp.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                break
            k, _, v = line.decode("ascii").partition(":")
            headers[k.strip().lower()] = v.strip()
        body = self.inp.read(int(headers["content-length"]))
        return json.loads(body.decode("utf-8"))

    def send(self, msg):
        msg["jsonrpc"] = "2.0"
        body = json.dumps(msg, ensure_ascii=False).encode("utf-8")
        self.out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.out.flush()

    def notify(self, method, params):
        self.send({"method": method, "params": params})

    def request(self, method, params, on_result=None):
        self.next_id += 1
        self.pending[self.next_id] = on_result
        self.send({"id": self.next_id, "method": method, "params": params})


def units(s, enc):
    if enc == "utf-8":
        return len(s.encode("utf-8"))
    if enc == "utf-32":
        return len(s)
    return len(s.encode("utf-16-le")) // 2


def char_index(line, col, enc):
    """Index into the Python string `line` of an LSP character offset."""
    n = 0
    for i, ch in enumerate(line):
        if n >= col:
            return i
        n += units(ch, enc)
    return len(line)


class Server:
    def __init__(self):
        self.conn = Conn()
        self.enc = "utf-16"
        self.docs = {}
        self.settings = {"maySeverity": "information"}
        self.shutdown = False

    # --- text -------------------------------------------------------------
    def offset(self, text, pos):
        lines = text.split("\n")
        line = min(pos["line"], len(lines))
        before = sum(len(l) + 1 for l in lines[:line])
        cur = lines[line] if line < len(lines) else ""
        return before + char_index(cur, pos["character"], self.enc)

    def apply_change(self, text, change):
        if "range" not in change:
            return change["text"]
        a = self.offset(text, change["range"]["start"])
        b = self.offset(text, change["range"]["end"])
        return text[:a] + change["text"] + text[b:]

    # --- analysis -----------------------------------------------------------
    def races(self, text):
        held = False
        accesses = []
        for i, line in enumerate(text.split("\n")):
            # Statements on one line are taken in order.
            for m in re.finditer(r"pthread_mutex_lock\(&m\)|pthread_mutex_unlock\(&m\)|\bcounter\+\+", line):
                tok = m.group(0)
                if tok.startswith("pthread_mutex_lock"):
                    held = True
                elif tok.startswith("pthread_mutex_unlock"):
                    held = False
                else:
                    accesses.append((i, m.start(), held, line))
            if line.startswith("}"):
                held = False
        guarded = [a for a in accesses if a[2]]
        out = []
        for (i, col, h, line) in accesses:
            if not h and guarded:
                out.append((i, col, line, guarded))
        return out

    def diagnostics(self, uri):
        text = self.docs[uri]
        diags = []
        for (i, col, line, guarded) in self.races(text):
            start = units(line[:col], self.enc)
            end = start + units("counter", self.enc)
            diags.append({
                "range": {"start": {"line": i, "character": start},
                          "end": {"line": i, "character": end}},
                "severity": 2,
                "source": "racelens",
                "code": "data-race",
                "message": "data race on `counter`: write in thread `main` holding no lock",
                "relatedInformation": [{
                    "location": {"uri": uri, "range": {
                        "start": {"line": g[0], "character": units(g[3][:g[1]], self.enc)},
                        "end": {"line": g[0], "character": units(g[3][:g[1]], self.enc) + 7}}},
                    "message": "conflicting write in thread `worker` holding `m`",
                } for g in guarded],
            })
        return diags

    def publish(self, uri, version=None):
        params = {"uri": uri, "diagnostics": self.diagnostics(uri)}
        if version is not None:
            params["version"] = version
        self.conn.notify("textDocument/publishDiagnostics", params)

    # --- handlers -------------------------------------------------------------
    def initialize(self, params):
        caps = params.get("capabilities", {})
        offered = (caps.get("general") or {}).get("positionEncodings") or []
        clangd = caps.get("offsetEncoding") or []
        if "utf-8" in offered or "utf-8" in clangd:
            self.enc = "utf-8"
        log("initialize: offered", offered, "clangd", clangd, "->", self.enc,
            "initializationOptions", json.dumps(params.get("initializationOptions")))
        result = {
            "capabilities": {
                "positionEncoding": self.enc,
                "textDocumentSync": {"openClose": True, "change": 2},
                "codeActionProvider": {"codeActionKinds": ["quickfix"]},
                "executeCommandProvider": {"commands": ["racelens.explain"]},
            },
            "serverInfo": {"name": "racelens-mock", "version": "0"},
        }
        if clangd:
            result["offsetEncoding"] = self.enc
        return result

    def initialized(self):
        token = "racelens-load"

        def after_create(_):
            self.conn.notify("$/progress", {"token": token, "value": {
                "kind": "begin", "title": "racelens: loading workspace", "percentage": 0}})
            self.conn.notify("$/progress", {"token": token, "value": {"kind": "end"}})

        self.conn.request("window/workDoneProgress/create", {"token": token}, after_create)

        def got_config(result):
            log("workspace/configuration ->", json.dumps(result))
            if isinstance(result, list) and result and isinstance(result[0], dict):
                self.settings = result[0]

        self.conn.request("workspace/configuration", {"items": [{"section": "racelens"}, {}]}, got_config)

    def code_action(self, params):
        uri = params["textDocument"]["uri"]
        text = self.docs.get(uri, "")
        lines = text.split("\n")
        actions = []
        for d in params.get("context", {}).get("diagnostics", []):
            if d.get("source") != "racelens":
                continue
            i = d["range"]["start"]["line"]
            line = lines[i]
            indent = re.match(r"\s*", line).group(0)
            body = line.strip()
            new = (f"{indent}pthread_mutex_lock(&m);\n{indent}{body}\n"
                   f"{indent}pthread_mutex_unlock(&m);")
            actions.append({
                "title": "Guard with `m` (held at 1 of 1 other accesses)",
                "kind": "quickfix",
                "diagnostics": [d],
                "isPreferred": True,
                "edit": {"changes": {uri: [{
                    "range": {"start": {"line": i, "character": 0},
                              "end": {"line": i, "character": units(line, self.enc)}},
                    "newText": new,
                }]}},
            })
        return actions

    def explain(self, args):
        arg = (args or [{}])[0]
        uri = arg.get("uri")
        pos = arg.get("position", {})
        for (i, col, line, guarded) in self.races(self.docs.get(uri, "")):
            if i == pos.get("line"):
                g = guarded[0]
                return {
                    "race": "data race on `counter`",
                    "steps": [
                        {"message": "worker writes `counter` holding `m`", "uri": uri,
                         "range": {"start": {"line": g[0], "character": 0},
                                   "end": {"line": g[0], "character": 0}}},
                        {"message": "main writes `counter` holding no lock", "uri": uri,
                         "range": {"start": {"line": i, "character": 0},
                                   "end": {"line": i, "character": 0}}},
                    ],
                    "text": "thread worker: lock m; counter++ (line %d)\n"
                            "thread main:   counter++ (line %d), no lock\n" % (g[0] + 1, i + 1),
                }
        return None

    def run(self):
        while True:
            msg = self.conn.read()
            if msg is None:
                return
            method = msg.get("method")
            if method is None:
                cb = self.conn.pending.pop(msg.get("id"), None)
                if cb:
                    cb(msg.get("result"))
                continue
            params = msg.get("params") or {}
            result = None
            if method == "initialize":
                result = self.initialize(params)
            elif method == "initialized":
                self.initialized()
            elif method == "shutdown":
                self.shutdown = True
            elif method == "exit":
                return
            elif method == "textDocument/didOpen":
                doc = params["textDocument"]
                self.docs[doc["uri"]] = doc["text"]
                self.publish(doc["uri"], doc.get("version"))
            elif method == "textDocument/didChange":
                uri = params["textDocument"]["uri"]
                for change in params["contentChanges"]:
                    self.docs[uri] = self.apply_change(self.docs[uri], change)
                log("didChange ->", json.dumps(self.docs[uri]))
                self.publish(uri, params["textDocument"].get("version"))
            elif method == "textDocument/didClose":
                self.docs.pop(params["textDocument"]["uri"], None)
            elif method == "textDocument/codeAction":
                result = self.code_action(params)
            elif method == "workspace/executeCommand":
                if params.get("command") == "racelens.explain":
                    result = self.explain(params.get("arguments"))
            if "id" in msg:
                self.conn.send({"id": msg["id"], "result": result})


if __name__ == "__main__":
    Server().run()
