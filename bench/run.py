#!/usr/bin/env python3
"""Regenerates docs/benchmarks.md in one run.

Run from the repository root after `cargo build --release -p racelens`:

    python3 bench/run.py                 # full run, writes docs/benchmarks.md
    python3 bench/run.py --runs 5        # more runs per file
    python3 bench/run.py --quick         # CI smoke: 6 files, 1 run, short edit
                                         # replays; writes target/benchmarks-quick.md

Measures, on the real-world corpus in ../shared/bench:

* batch analysis: median wall time of `racelens check --format sarif FILE`
  for every realworld/*/*.c file, next to `gcc -fsyntax-only -w FILE`;
* peak RSS of that run on mt-daapd_comb.c against the 150 MB budget;
* edit-to-diagnostics latency from `racelens bench edit` on pfscan_comb.c
  and mt-daapd_comb.c, next to the bare tree-sitter reparse it prints, and
  on the main file of each project (memcached, pigz) loaded as a workspace;
* cold load of the memcached project from `racelens bench load`;
* the same edit path through a real client, `racelens bench lsp`: the
  server spawned and spoken to over stdio, typing at 50/100/200 ms per key,
  random one-character edits, a memory soak; clangd on the same typing when
  `clangd` is installed.

Python 3.11 standard library only. Exits with 1 when a racelens run
crashed, timed out or failed, 2 on a usage error; budgets are reported,
not enforced.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RSS_BUDGET_MB = 150
SLOW_FILE_S = 2.0
RSS_FILE = "pthread/mt-daapd_comb.c"
EDIT_FILES = ["pthread/pfscan_comb.c", "pthread/mt-daapd_comb.c"]
# (project folder, file edited in it): the realistic editor workload, a file
# of an unpreprocessed multi-file program.
EDIT_PROJECTS = [("projects/memcached", "memcached.c"), ("projects/pigz", "pigz.c")]
LOAD_PROJECT = "projects/memcached"
QUICK_FILES = ["pthread/pfscan_comb.c", "pthread/aget_comb.c", "pthread/mt-daapd_comb.c", "concrat/C-Thread-Pool.c", "concrat/axel.c", "concrat/wrk.c"]
# Edit-to-diagnostics p50 of clangd 14 measured on this kind of machine with
# an external LSP client (docs in ../shared/notes/stack.md); not re-measured.
CLANGD_P50_MS = {"pthread/pfscan_comb.c": 75, "pthread/mt-daapd_comb.c": 750}
TIMEOUT_S = 600
# `racelens bench lsp` cases: (file, workspace folder or None, arguments,
# arguments with --quick). Targets (issue 26): pfscan typing p95 <= 10 ms,
# mt-daapd random p95 <= 60 ms, memcached.c in its project p95 <= 100 ms,
# RSS after 5,000 edits <= 1.5x RSS after open.
LSP_CASES = [
    ("realworld/pthread/pfscan_comb.c", None, ["--places", "4", "--edits", "500"], ["--places", "1", "--interval-ms", "100", "--edits", "50"]),
    ("realworld/pthread/mt-daapd_comb.c", None, ["--places", "3", "--interval-ms", "50", "--interval-ms", "200", "--edits", "2000", "--soak", "5000"], ["--scenario", "random", "--edits", "50"]),
    ("projects/memcached/memcached.c", "projects/memcached", ["--places", "3", "--interval-ms", "100", "--edits", "500"], ["--scenario", "random", "--edits", "30"]),
]
# clangd on the same pfscan typing and random edits.
CLANGD_CASE = ("realworld/pthread/pfscan_comb.c", ["--places", "4", "--edits", "200"], ["--places", "1", "--interval-ms", "100", "--edits", "20"])
LSP_TIMEOUT_S = 3600
# Processes that mean someone else is building on the machine.
FOREIGN_BUILDS = {"rustc", "cargo", "cc1", "cc1plus", "ld", "collect2", "node", "clang"}


@dataclass
class Run:
    """One process run: wall time, peak RSS and how it ended."""

    seconds: float
    rss_kb: int
    status: int | None  # exit code, None on timeout, negative for a signal
    stdout: str = ""
    stderr: str = ""


def run(cmd: list[str], capture: bool = False, timeout: float = TIMEOUT_S) -> Run:
    """Runs `cmd`, timing it and reading its peak RSS from wait4()."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out if capture else subprocess.DEVNULL, stderr=err)
        deadline = start + timeout
        while True:
            pid, wstatus, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                _, wstatus, usage = os.wait4(proc.pid, 0)
                proc.returncode = -9
                return Run(time.perf_counter() - start, usage.ru_maxrss, None)
            time.sleep(0.002)
        seconds = time.perf_counter() - start
        status = os.waitstatus_to_exitcode(wstatus)
        proc.returncode = status  # keep Popen from waiting on a reaped pid
        out.seek(0)
        err.seek(0)
        return Run(seconds, usage.ru_maxrss, status, out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def first_line(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.splitlines()[0].strip()
    except (OSError, IndexError, subprocess.SubprocessError):
        return "not available"


def machine() -> dict[str, str]:
    info = {}
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    info["CPU"] = model.group(1).strip() if model else platform.processor() or "unknown"
    physical = {(m.group(1)) for m in re.finditer(r"^core id\s*:\s*(\d+)", cpuinfo, re.M)}
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    info["Cores"] = f"{cores} logical ({usable} usable by this process" + (f", {len(physical)} distinct core ids)" if physical else ")")
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    total = re.search(r"^MemTotal:\s*(\d+) kB", meminfo, re.M)
    info["RAM"] = f"{int(total.group(1)) / 1024 / 1024:.1f} GiB" if total else "unknown"
    os_release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    pretty = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', os_release, re.M)
    info["OS"] = f"{pretty.group(1) if pretty else platform.system()}, kernel {platform.release()}"
    info["rustc"] = first_line(["rustc", "--version"])
    info["gcc"] = first_line(["gcc", "--version"])
    info["Python"] = platform.python_version()
    return info


def git_revision() -> str:
    rev = first_line(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    try:
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        dirty = ""
    return rev + (" with uncommitted changes" if dirty else "")


class LoadMonitor:
    """Samples the load average and foreign build processes between runs."""

    def __init__(self) -> None:
        self.samples = 0
        self.busy = 0
        self.max_load = 0.0
        self.seen: set[str] = set()

    def sample(self) -> None:
        self.samples += 1
        try:
            self.max_load = max(self.max_load, float(Path("/proc/loadavg").read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            pass
        mine = {os.getpid()}
        found = set()
        for p in Path("/proc").iterdir():
            if not p.name.isdigit() or int(p.name) in mine:
                continue
            try:
                comm = (p / "comm").read_text().strip()
            except OSError:
                continue
            if comm in FOREIGN_BUILDS:
                found.add(comm)
        if found:
            self.busy += 1
            self.seen |= found

    def note(self) -> str:
        cores = os.cpu_count() or 1
        if self.busy == 0 and self.max_load < cores:
            return f"The machine was otherwise idle as far as sampled (highest 1-minute load average {self.max_load:.2f} on {cores} cores)."
        names = ", ".join(sorted(self.seen)) or "none"
        return (
            f"**Other work was running during this run**: build processes ({names}) were seen in {self.busy} of {self.samples} samples "
            f"taken between measurements, and the 1-minute load average reached {self.max_load:.2f} on {cores} cores. "
            "Times are therefore upper bounds; medians of several runs dampen, but do not remove, the effect."
        )


def peak_rss_kb(cmd: list[str], capture: bool) -> tuple[int | None, Run]:
    """One extra run under `/usr/bin/time -f %M` for the peak RSS. wait4()'s
    figure for a child of this Python process can include the parent's own
    resident set copied at fork time, which dwarfs small runs."""
    gnu_time = "/usr/bin/time"
    if not os.access(gnu_time, os.X_OK):
        r = run(cmd, capture=capture)
        return r.rss_kb, r
    r = run([gnu_time, "-f", "racelens-rss-kb %M", *cmd], capture=capture)
    m = re.search(r"racelens-rss-kb (\d+)", r.stderr)
    r.stderr = r.stderr[: m.start()] if m else r.stderr
    return (int(m.group(1)) if m else None), r


@dataclass
class FileResult:
    rel: str
    size: int
    racelens: list[Run] = field(default_factory=list)
    gcc: list[Run] = field(default_factory=list)
    results: int | None = None
    rss_kb: int | None = None
    # Loading the file into the analysis host (tree-sitter parse), from the
    # untimed run's RACELENS_TIMING output: the floor under racelens's time.
    parse_s: float | None = None

    @staticmethod
    def median(runs: list[Run]) -> float | None:
        ok = [r.seconds for r in runs if r.status is not None]
        return statistics.median(ok) if ok else None

    def racelens_failed(self) -> str | None:
        for r in self.racelens:
            if r.status is None:
                return "timeout"
            if r.status not in (0, 1):
                return f"exit {r.status}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}"
        return None


def sarif_results(text: str) -> int | None:
    try:
        return sum(len(run.get("results", [])) for run in json.loads(text).get("runs", []))
    except (ValueError, AttributeError):
        return None


def parsed_in(stderr: str) -> float | None:
    """The `racelens: parsed in 96.5ms` line of RACELENS_TIMING (Rust's Debug
    format of a Duration)."""
    m = re.search(r"racelens: parsed in ([\d.]+)(ns|µs|us|ms|s)\b", stderr)
    if not m:
        return None
    scale = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
    return float(m.group(1)) * scale


def batch(binary: str, files: list[tuple[str, Path]], runs: int, monitor: LoadMonitor, have_gcc: bool) -> list[FileResult]:
    results = []
    for i, (rel, path) in enumerate(files, 1):
        res = FileResult(rel, path.stat().st_size)
        cmd = [binary, "check", "--format", "sarif", str(path)]
        # A first, untimed run: peak RSS, the SARIF result count, and warm caches.
        monitor.sample()
        res.rss_kb, first = peak_rss_kb(["env", "RACELENS_TIMING=1", *cmd], capture=True)
        res.results = sarif_results(first.stdout)
        res.parse_s = parsed_in(first.stderr)
        if first.status not in (0, 1):
            res.racelens.append(first)
        for _ in range(runs):
            monitor.sample()
            res.racelens.append(run(cmd))
            if have_gcc:
                monitor.sample()
                res.gcc.append(run(["gcc", "-fsyntax-only", "-w", str(path)]))
        t = FileResult.median(res.racelens)
        print(f"[{i}/{len(files)}] {rel}: racelens {fmt_s(t)}, gcc {fmt_s(FileResult.median(res.gcc))}" + (f" ({res.racelens_failed()})" if res.racelens_failed() else ""), file=sys.stderr)
        results.append(res)
    return results


LATENCY = re.compile(r"^\s*(?P<label>\S.*?)\s+p50\s+(?P<p50>[\d.]+) ms\s+p95\s+(?P<p95>[\d.]+) ms\s+max\s+(?P<max>[\d.]+) ms\s*$")
OPEN = re.compile(r"open to first diagnostics ([\d.]+) ms")
COLD = re.compile(r"cold load to first diagnostics ([\d.]+) ms(.*)$", re.M)
STEP = re.compile(r"^(scan|read \+ parse|open \+ analysis \+ convert)\s+([\d.]+) ms\s*$", re.M)


def lsp_available(binary: str) -> bool:
    r = run([binary, "bench", "--help"], capture=True, timeout=60)
    return r.status == 0 and "lsp" in r.stdout


def bench_available(binary: str) -> bool:
    r = run([binary, "bench", "--help"], capture=True, timeout=60)
    return r.status == 0 and "edit" in r.stdout


def edit_latency(binary: str, path: Path, iterations: int, monitor: LoadMonitor, workspace: Path | None = None) -> dict | None:
    monitor.sample()
    extra = ["--workspace", str(workspace)] if workspace else []
    r = run([binary, "bench", "edit", str(path), "--iterations", str(iterations), *extra], capture=True)
    if r.status != 0:
        print(f"bench edit {path.name} failed: {r.status} {r.stderr.strip()[-300:]}", file=sys.stderr)
        return {"error": "timeout" if r.status is None else f"exit {r.status}"}
    rows = [m.groupdict() for m in map(LATENCY.match, r.stdout.splitlines()) if m]
    opened = OPEN.search(r.stdout)
    edits = re.search(r"^(\d+) edits inside (\d+) function bodies", r.stdout, re.M)
    return {"rows": rows, "open_ms": float(opened.group(1)) if opened else None, "edits": edits.group(0) if edits else None, "raw": r.stdout}


LSP_ROW = re.compile(r"^(?P<label>\S.*?)\s+p50\s+(?P<p50>[\d.]+) ms\s+p95\s+(?P<p95>[\d.]+) ms\s+max\s+(?P<max>[\d.]+) ms\s+\(n=(?P<n>\d+)\)\s*$")
LSP_OPEN = re.compile(r"open to first diagnostics ([\d.]+) ms, RSS ([\d.]+) MB")
LSP_SOAK = re.compile(r"^soak RSS MB after edits: (.*)$", re.M)
LSP_RATIO = re.compile(r"^soak RSS after (\d+) edits / after open: ([\d.]+)x", re.M)


def lsp_latency(binary: str, path: Path, extra: list[str], monitor: LoadMonitor, workspace: Path | None = None, server: list[str] | None = None) -> dict:
    """`racelens bench lsp`: the server spawned and driven over stdio."""
    monitor.sample()
    cmd = [binary, "bench", "lsp", str(path), *extra]
    if workspace:
        cmd += ["--workspace", str(workspace)]
    for part in server or []:
        cmd.append(f"--server={part}")
    r = run(cmd, capture=True, timeout=LSP_TIMEOUT_S)
    if r.status != 0:
        print(f"bench lsp {path.name} failed: {r.status} {r.stderr.strip()[-300:]}", file=sys.stderr)
        return {"error": "timeout" if r.status is None else f"exit {r.status}"}
    opened = LSP_OPEN.search(r.stdout)
    soak = LSP_SOAK.search(r.stdout)
    ratio = LSP_RATIO.search(r.stdout)
    return {
        "rows": [m.groupdict() for m in map(LSP_ROW.match, r.stdout.splitlines()) if m],
        "open_ms": float(opened.group(1)) if opened else None,
        "open_rss": float(opened.group(2)) if opened else None,
        "soak": soak.group(1) if soak else None,
        "ratio": (int(ratio.group(1)), float(ratio.group(2))) if ratio else None,
    }


def cold_load(binary: str, project: Path, runs: int, monitor: LoadMonitor) -> dict | None:
    loads = []
    for _ in range(runs):
        monitor.sample()
        r = run([binary, "bench", "load", str(project)], capture=True)
        if r.status != 0:
            return {"error": "timeout" if r.status is None else f"exit {r.status}"}
        m = COLD.search(r.stdout)
        if m:
            detail = m.group(2).strip().replace(str(project.parent.parent) + "/", "")
            loads.append((float(m.group(1)), {s: float(v) for s, v in STEP.findall(r.stdout)}, detail, r.rss_kb, r.stdout))
    if not loads:
        return None
    loads.sort(key=lambda x: x[0])
    med = loads[len(loads) // 2]
    files = re.search(r":\s*(\d+) files", med[4])
    return {"ms": med[0], "steps": med[1], "detail": med[2], "rss_kb": med[3], "all": [x[0] for x in loads], "files": files.group(1) if files else "?"}


def fmt_s(t: float | None) -> str:
    return "n/a" if t is None else f"{t:.3f} s"


def fmt_ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.1f}x"


def render(args, info, rev, monitor, results, rss, edits, load, started, elapsed, lsp=None) -> str:
    out = []
    w = out.append
    w("# Benchmarks")
    w("")
    w(f"Generated by `{' '.join(['python3', 'bench/run.py', *args.argv])}` on {started:%Y-%m-%d %H:%M} UTC, in {elapsed / 60:.1f} minutes. "
      "Do not edit by hand: rerun the script. Corpus: `../shared/bench` (paths below are relative to it).")
    w("")
    w("## Machine")
    w("")
    w("| | |")
    w("|---|---|")
    for k, v in info.items():
        w(f"| {k} | {v} |")
    w(f"| racelens | `{args.bin}` (run from a private copy), {args.version}; working tree at commit {rev} |")
    w("")
    w(monitor.note())
    w("")

    timed = [r for r in results if FileResult.median(r.racelens) is not None]
    total_rl = sum(FileResult.median(r.racelens) for r in timed)
    gcc_times = [FileResult.median(r.gcc) for r in timed]
    total_gcc = sum(t for t in gcc_times if t is not None) if all(t is not None for t in gcc_times) and gcc_times else None
    slowest = max(timed, key=lambda r: FileResult.median(r.racelens), default=None)
    slow = [r for r in timed if FileResult.median(r.racelens) > SLOW_FILE_S]
    failed = [(r.rel, r.racelens_failed()) for r in results if r.racelens_failed()]
    w("## Batch analysis: `racelens check --format sarif FILE`")
    w("")
    w(f"{len(results)} files, median of {args.runs} timed run{'s' if args.runs != 1 else ''} each (after one untimed run that measures the peak RSS "
      "and counts the SARIF results), wall time including process start, next to `gcc -fsyntax-only -w FILE` "
      "(parsing and type checking only, no code generation) as a yardstick.")
    w("")
    w(f"- **Total**: racelens {fmt_s(total_rl)}, gcc {fmt_s(total_gcc)}, ratio {fmt_ratio(total_rl, total_gcc)}")
    parse_times = [r.parse_s for r in timed]
    if parse_times and all(t is not None for t in parse_times):
        total_parse = sum(parse_times)
        w(f"- **Of which loading and parsing** (tree-sitter, from `RACELENS_TIMING`, untimed run): {fmt_s(total_parse)}, "
          f"{fmt_ratio(total_parse, total_gcc)} of gcc's whole time")
    if slowest:
        w(f"- **Slowest file**: `{slowest.rel}` at {fmt_s(FileResult.median(slowest.racelens))} ({slowest.size / 1024:.0f} KB)")
    w(f"- **Files over {SLOW_FILE_S:.0f} s**: " + (", ".join(f"`{r.rel}` ({fmt_s(FileResult.median(r.racelens))})" for r in slow) if slow else "none"))
    peak = max((r for r in results if r.rss_kb is not None), key=lambda r: r.rss_kb, default=None)
    if peak:
        w(f"- **Highest peak RSS**: `{peak.rel}` at {peak.rss_kb / 1024:.0f} MB")
    w(f"- **Failures** (crash, timeout, exit code 2): " + ("; ".join(f"`{f}`: {why}" for f, why in failed) if failed else "none"))
    w("")
    w("| file | size | racelens | of which parse | gcc | ratio | peak RSS | SARIF results |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        t, g = FileResult.median(r.racelens), FileResult.median(r.gcc)
        rss_text = "n/a" if r.rss_kb is None else f"{r.rss_kb / 1024:.0f} MB"
        status = r.racelens_failed()
        mark = " **(over 2 s)**" if t is not None and t > SLOW_FILE_S else ""
        w(f"| `{r.rel}` | {r.size / 1024:.0f} KB | {fmt_s(t) if not status else status}{mark} | {fmt_s(r.parse_s)} | {fmt_s(g)} | {fmt_ratio(t, g)} | {rss_text} | {'n/a' if r.results is None else r.results} |")
    w("")

    w(f"## Peak memory on `{RSS_FILE}`")
    w("")
    if rss:
        verdict = "within" if max(rss) / 1024 <= RSS_BUDGET_MB else "**over**"
        w(f"Peak RSS of `racelens check --format sarif` (`/usr/bin/time -f %M`): **{max(rss) / 1024:.0f} MB**, {verdict} the {RSS_BUDGET_MB} MB budget.")
    else:
        w("Not measured (the file is not in this run).")
    w("")

    w("## Edit latency: `racelens bench edit FILE`")
    w("")
    if edits is None:
        w("Not available: this racelens has no `bench edit` subcommand.")
    else:
        w(f"Each file is opened as by `didOpen`, then {args.edit_iterations} small edits inside function bodies are replayed as by `didChange`, "
          "each followed by fresh diagnostics, in process. A file marked (project) is edited as one file of its loaded project folder (`--workspace`), the realistic editor workload. "
          "The bare tree-sitter incremental reparse of the same edits is the floor any editor integration pays. "
          "clangd 14's edit-to-diagnostics p50 on the same files (measured earlier with an external LSP client, not by this script) is given for scale.")
        w("")
        w("| file | open to first diagnostics | measure | p50 | p95 | max |")
        w("|---|---:|---|---:|---:|---:|")
        for rel, e in edits.items():
            if e is None or "error" in e:
                w(f"| `{rel}` | n/a | {'failed: ' + e['error'] if e else 'file missing'} | | | |")
                continue
            for i, row in enumerate(e["rows"]):
                opened = f"{e['open_ms']:.1f} ms" if i == 0 and e["open_ms"] is not None else ""
                w(f"| {'`' + rel + '`' if i == 0 else ''} | {opened} | {row['label']} | {row['p50']} ms | {row['p95']} ms | {row['max']} ms |")
            if rel in CLANGD_P50_MS:
                w(f"| | | clangd 14 edit to diagnostics (reference) | {CLANGD_P50_MS[rel]} ms | | |")
        w("")
    w("## Edit latency through a real client: `racelens bench lsp FILE`")
    w("")
    if lsp is None:
        w("Not available: this racelens has no `bench lsp` subcommand.")
    else:
        w("The server is spawned and driven over stdio like an editor; each figure runs from sending `didChange` to the first "
          "`publishDiagnostics` of that version (for a key superseded before its own publish, the first of a newer version). "
          "Typing: a statement typed key by key at the start of several function bodies, at the given interval; the count of keys "
          "whose own version was published is shown. Random: one-character inserts and deletes in function bodies, each undone by the next, "
          "each sent when the previous diagnostics arrived, with a hover sent along with every tenth edit. Soak: more random edits, the server's "
          "`VmRSS` read every 500. Targets (issue 26): pfscan typing p95 <= 10 ms; mt-daapd random p95 <= 60 ms; memcached.c in its project "
          "p95 <= 100 ms; RSS after 5,000 edits <= 1.5x RSS after open. These are the latencies users feel; the in-process figures above explain where the time goes.")
        w("")
        w("| file | server | open to first diagnostics | scenario | p50 | p95 | max | n |")
        w("|---|---|---:|---|---:|---:|---:|---:|")
        for (rel, server), e in lsp.items():
            if "error" in e:
                w(f"| `{rel}` | {server} | n/a | failed: {e['error']} | | | | |")
                continue
            for i, row in enumerate(e["rows"]):
                opened = f"{e['open_ms']:.1f} ms, {e['open_rss']:.0f} MB" if i == 0 and e["open_ms"] is not None else ""
                w(f"| {'`' + rel + '`' if i == 0 else ''} | {server if i == 0 else ''} | {opened} | {row['label']} | {row['p50']} ms | {row['p95']} ms | {row['max']} ms | {row['n']} |")
        for (rel, server), e in lsp.items():
            if e.get("soak"):
                n, ratio = e["ratio"] or (0, 0.0)
                w("")
                w(f"Soak on `{rel}` ({server}), RSS in MB after so many edits: {e['soak']}; after {n} edits {ratio:.2f}x the RSS after open.")
    w("")
    w("## Cold load: `racelens bench load " + LOAD_PROJECT + "`")
    w("")
    if load is None:
        w("Not available: this racelens has no `bench load` subcommand, or its output was not understood.")
    elif "error" in load:
        w(f"Failed: {load['error']}.")
    else:
        w(f"From a cold start on the folder ({load['files']} files) to the first diagnostics: **{load['ms']:.1f} ms** "
          f"(median of {len(load['all'])}: {', '.join(f'{x:.1f}' for x in load['all'])} ms). {load['detail']}")
        if load["steps"]:
            w("")
            w("| step | ms |")
            w("|---|---:|")
            for k, v in load["steps"].items():
                w(f"| {k} | {v:.1f} |")
    w("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/racelens", help="the racelens binary (default: %(default)s)")
    ap.add_argument("--runs", type=int, default=None, help="runs per file; the median is reported (default: 3, or 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help=f"CI smoke: {len(QUICK_FILES)} files, 1 run, short edit replays")
    ap.add_argument("--bench-dir", default="../shared/bench", help="the benchmark corpus (default: %(default)s)")
    ap.add_argument("--edit-iterations", type=int, default=None, help="edits replayed per file by `bench edit` (default: 100, or 10 with --quick)")
    ap.add_argument("--out", default=None, help="the report (default: docs/benchmarks.md, or target/benchmarks-quick.md with --quick)")
    args = ap.parse_args()
    args.argv = sys.argv[1:]
    args.runs = args.runs or (1 if args.quick else 3)
    args.edit_iterations = args.edit_iterations or (10 if args.quick else 100)
    out_path = Path.cwd() / args.out if args.out else ROOT / ("target/benchmarks-quick.md" if args.quick else "docs/benchmarks.md")
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    if "/" in args.bin:
        # Relative to where the script was started, else to the repository.
        candidates = [Path.cwd() / args.bin, ROOT / args.bin]
        binary = next((str(c) for c in candidates if c.is_file()), None)
    else:
        binary = shutil.which(args.bin)
    os.chdir(ROOT)
    if not binary:
        print(f"racelens binary `{args.bin}` not found; build it with `cargo build --release -p racelens`", file=sys.stderr)
        return 2
    # Run a private copy: a `cargo build` elsewhere may replace the binary
    # in the middle of a run.
    private = Path(tempfile.mkdtemp(prefix="racelens-bench-")) / "racelens"
    shutil.copy2(Path(binary).resolve(), private)
    binary = str(private)
    args.version = first_line([binary, "--version"])
    try:
        return measure(args, binary, out_path)
    finally:
        shutil.rmtree(private.parent, ignore_errors=True)


def measure(args, binary: str, out_path: Path) -> int:
    corpus = (ROOT / args.bench_dir).resolve()
    files = sorted(corpus.glob("realworld/*/*.c"))
    if not files:
        print(f"no realworld/*/*.c files under {corpus}", file=sys.stderr)
        return 2
    rels = [(str(f.relative_to(corpus / "realworld")), f) for f in files]
    if args.quick:
        rels = [x for x in rels if x[0] in QUICK_FILES]
    have_gcc = shutil.which("gcc") is not None

    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    monitor = LoadMonitor()
    info = machine()
    rev = git_revision()
    print(f"racelens {binary}, {len(rels)} files x {args.runs} runs", file=sys.stderr)
    results = batch(binary, rels, args.runs, monitor, have_gcc)
    rss = [res.rss_kb for res in results if res.rel == RSS_FILE and res.rss_kb is not None]

    edits = None
    load = None
    if bench_available(binary):
        edits = {}
        for rel in EDIT_FILES:
            path = corpus / "realworld" / rel
            edits[rel] = edit_latency(binary, path, args.edit_iterations, monitor) if path.is_file() else None
            print(f"bench edit {rel}: done", file=sys.stderr)
        for folder, name in EDIT_PROJECTS:
            path = corpus / folder / name
            edits[f"{folder}/{name} (project)"] = edit_latency(binary, path, args.edit_iterations, monitor, corpus / folder) if path.is_file() else None
            print(f"bench edit {folder}/{name}: done", file=sys.stderr)
        project = corpus / LOAD_PROJECT
        load = cold_load(binary, project, max(args.runs, 7), monitor) if project.is_dir() else {"error": f"{LOAD_PROJECT} not found"}
        print("bench load: done", file=sys.stderr)
    lsp = None
    if lsp_available(binary):
        lsp = {}
        for rel, folder, full, quick in LSP_CASES:
            path = corpus / rel
            if not path.is_file():
                lsp[(rel, "racelens")] = {"error": "file missing"}
                continue
            ws = corpus / folder if folder else None
            lsp[(rel, "racelens")] = lsp_latency(binary, path, quick if args.quick else full, monitor, ws)
            print(f"bench lsp {rel}: done", file=sys.stderr)
        clangd = shutil.which("clangd")
        rel, full, quick = CLANGD_CASE
        if clangd and (corpus / rel).is_file():
            version = first_line([clangd, "--version"]).replace("Debian ", "")
            lsp[(rel, version)] = lsp_latency(binary, corpus / rel, quick if args.quick else full, monitor, server=[clangd, "--log=error"])
            print(f"bench lsp {rel} (clangd): done", file=sys.stderr)

    text = render(args, info, rev, monitor, results, rss, edits, load, started, time.perf_counter() - t0, lsp)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(text)
    print(f"wrote {out_path}", file=sys.stderr)
    broken = [r.rel for r in results if r.racelens_failed()]
    broken += [rel for rel, e in (edits or {}).items() if e and "error" in e]
    if load and "error" in load:
        broken.append(LOAD_PROJECT)
    broken += [f"bench lsp {rel} ({server})" for (rel, server), e in (lsp or {}).items() if "error" in e]
    if broken:
        print(f"failures: {', '.join(broken)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
