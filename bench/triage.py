#!/usr/bin/env python3
"""Precision of racelens on real programs, measured against hand labels.

The ledger is `bench/triage/labels/<program>.tsv`: one file per program, with
the header `file line variable verdict reason cause`. `file` is relative to
`../shared/bench`; `verdict` is `true`, `false` or `unclear`; `reason` names
the code that decides it (the lock held, the join, the allocation); `cause`
classifies a false alarm (alloc-site-merge, stack-local, callback-thread,
lock-wrapper, missed-ordering, type-merge, value-guard, other; `none` for a
true race). A program `proj-NAME` is the project folder `projects/NAME`; any
other name is the file `realworld/*/NAME.c`.

    python3 bench/triage.py [--bin target/release/racelens] [--shared ../shared]

runs `racelens check --format json` on every labelled program (or, with
`--saved DIR`, reads its earlier output `DIR/PROGRAM.json`) and prints,
per program and in total: the reports, how many carry a label, and the
precision over the labelled ones (true / (true + false); `unclear` counts in
neither), for must reports and for all. Labels whose report is gone are
counted too: a label is evidence about the code, and stays valid.
"""
import argparse, collections, csv, glob, json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_labels():
    labels = {}
    for path in sorted(glob.glob(os.path.join(HERE, "triage", "labels", "*.tsv"))):
        prog = os.path.basename(path)[:-4]
        with open(path, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                key = (row["file"], int(row["line"]), row["variable"])
                labels.setdefault(prog, {})[key] = row
    return labels


def target(shared, prog):
    bench = os.path.join(shared, "bench")
    if prog.startswith("proj-"):
        return os.path.join("projects", prog[5:])
    hits = glob.glob(os.path.join(bench, "realworld", "*", prog + ".c"))
    if not hits:
        sys.exit(f"triage: no program {prog} under {bench}/realworld")
    return os.path.relpath(hits[0], bench)


def reports(binary, shared, rel, saved=None, prog=None):
    bench = os.path.join(shared, "bench")
    if saved:
        with open(os.path.join(saved, prog + ".json")) as f:
            text = f.read()
    else:
        p = subprocess.run([binary, "check", "--format", "json", rel], cwd=bench,
                           capture_output=True, text=True, timeout=600)
        if p.returncode not in (0, 1):
            sys.exit(f"triage: check {rel} failed ({p.returncode}): {p.stderr.strip()}")
        text = p.stdout
    out = []
    for r in json.loads(text).get("races", []):
        loc = r["location"]
        f = os.path.relpath(os.path.join(bench, loc["file"]), bench) if not os.path.isabs(loc["file"]) \
            else os.path.relpath(loc["file"], bench)
        # Names as racelens prints them today (older outputs quoted heap
        # objects' functions in backticks).
        var = r["variable"].replace("`", "")
        # What the editor shows by default: must races, and may races on a
        # concrete object (not `unresolved`: type-based or wild memory)
        # with a thread that surely exists (not `speculative`) and not
        # under an element of one lock array on both sides (`lockArray`).
        shown = r.get("confidence") == "must" or not (
            r.get("unresolved", False) or r.get("speculative", False)
            or r.get("lockArray"))
        out.append(((f, loc["line"], var), r.get("confidence", "may"), shown))
    return out


def precision(c):
    d = c["true"] + c["false"]
    return f"{c['true'] / d:.2f}" if d else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "target", "release", "racelens"))
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    ap.add_argument("--json", help="also write the totals here")
    ap.add_argument("--saved", help="read PROGRAM.json from this folder instead of running check "
                    "(`check --format json` outputs saved earlier, e.g. of another binary)")
    ap.add_argument("--list", metavar="CAUSE",
                    help="also list the labelled false or unclear reports still made, of this cause "
                    "(`all` for every cause), with whether the editor shows them by default")
    a = ap.parse_args()
    labels = load_labels()
    tot = {"reports": 0, "labelled": 0, "unlabelled": 0,
           "must": collections.Counter(), "all": collections.Counter(),
           "editor": 0, "editor_all": collections.Counter(),
           "causes": collections.Counter(), "shown_causes": collections.Counter(),
           "ledger": collections.Counter()}
    listed = []
    print(f"{'program':<18} {'reports':>8} {'labelled':>8} {'unlab.':>7} {'prec must':>9} {'prec all':>9}")
    for prog in sorted(labels):
        rel = target(a.shared, prog)
        rs = reports(os.path.abspath(a.bin), os.path.abspath(a.shared), rel, a.saved, prog)
        must, every = collections.Counter(), collections.Counter()
        labelled = 0
        for key, conf, shown in rs:
            tot["editor"] += shown
            row = labels[prog].get(key)
            if row is None:
                continue
            labelled += 1
            every[row["verdict"]] += 1
            if shown:
                tot["editor_all"][row["verdict"]] += 1
            if conf == "must":
                must[row["verdict"]] += 1
            if row["verdict"] != "true":
                cause = row.get("cause", "other")
                tot["causes"][cause] += 1
                tot["shown_causes"][cause] += shown
                if a.list in ("all", cause):
                    listed.append((prog, cause, conf, "shown" if shown else "hidden", *key,
                                   row["reason"][:160]))
        for row in labels[prog].values():
            tot["ledger"][row["verdict"]] += 1
        tot["reports"] += len(rs)
        tot["labelled"] += labelled
        tot["unlabelled"] += len(rs) - labelled
        tot["must"] += must
        tot["all"] += every
        print(f"{prog:<18} {len(rs):>8} {labelled:>8} {len(rs) - labelled:>7} {precision(must):>9} {precision(every):>9}")
    print(f"{'total':<18} {tot['reports']:>8} {tot['labelled']:>8} {tot['unlabelled']:>7} "
          f"{precision(tot['must']):>9} {precision(tot['all']):>9}")
    print(f"ledger: {sum(tot['ledger'].values())} labels ({dict(tot['ledger'])}); "
          f"still reported: all {dict(tot['all'])}, must {dict(tot['must'])}")
    print(f"shown by default in the editor (must, and may on a concrete object): {tot['editor']} reports, "
          f"precision {precision(tot['editor_all'])} ({dict(tot['editor_all'])})")
    print(f"false or unclear reports still made, by cause: {dict(tot['causes'].most_common())}")
    print(f"  of them shown by default: {dict(tot['shown_causes'].most_common())}")
    for row in listed:
        print("\t".join(map(str, row)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({k: (dict(v) if isinstance(v, collections.Counter) else v) for k, v in tot.items()}, f, indent=1)


if __name__ == "__main__":
    main()
