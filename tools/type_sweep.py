#!/usr/bin/env python3
"""Type sweep of every JSON input the CLI reads: no input makes a command crash or fail inside.

Usage: tools/type_sweep.py [KVCONFORM] [--quick] [--surface NAME ...] [--cap N] [--list]
  KVCONFORM: the kvconform binary (default build/bin/kvconform).
  --quick: a deterministic sample (fewer nodes per document, every third file, every 18th
           invalid fixture, every sixth change of the inputs read one process per run): ctest
           runs this as json_type_sweep (7,824 runs, 57 s with a CUDA build's CLI on 2026-12-07);
           the full sweep ran 50,674 in 2 min 21 s with a CPU build's.
  --surface: only these surfaces (default all): validate invalid check model cli merge history.
  --cap N: the root and every top-level member of each document, and deeper nodes up to N
           nodes in all (evenly spaced; default 150, 12 with --quick).
  --list: print every run's command line as it goes.

Each node of a bundled document (the root, every member, the first three elements of every
array; --cap samples them) is replaced, one at a time, by a value of each other JSON type (5, -1,
1.5, "x", true, null, [], {}, [1], {"a": 1}), and the command that reads the document runs on it:
  validate  fixtures/**/*.json (not models/) through `validate --format json`;
  invalid   invalid fixtures (their patch documents) through `validate` and `fixture materialize`;
  check     the first, second, third, middle and last line of every bundled trace (with --quick
            the first and middle) through `validate --format json` (the checker `check` runs);
  model     a model's hf_logits.json, config.json and safetensors header through `suite --root`;
  cli       `calc kv-bytes --hf-config`, `calc service-metrics`, `handoff replay`, `manifest seal`;
  merge     `fuzz merge` of a race campaign report (a passing one and one with a failure);
  history   `fuzz check` of the bundled race history (its header and first two operations).
`validate` and `fixture materialize` take up to 200 documents per process (a CI build's CLI
loads the CUDA libraries at start, ~0.15 s a process); a batch that fails is rerun one document
at a time, so that each failure names its document. A run fails when the command exits with
anything but 0, 1, 2 or 4 (the documented codes: conform,
violations, unreadable input, unknown within the budget), dies by a signal, prints "internal
error", or (validate, check) prints JSON that does not parse. Exit 0 when no run fails, else 1,
listing each failure with its surface, file, node (a path of members and indexes) and value: the
reproducer is that one change to that file.
"""
import copy
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VALUES = [5, -1, 1.5, "x", True, None, [], {}, [1], {"a": 1}]
SURFACES = ["validate", "invalid", "check", "model", "cli", "merge", "history"]
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", UCX_MEM_EVENTS="no")
BATCH = 200  # documents per validate / materialize process


def nodes(doc, path=()):
    """The root, every member and the first three elements of every array, in document order."""
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from nodes(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            yield from nodes(v, path + (i,))


def at(doc, path):
    for x in path:
        doc = doc[x]
    return doc


def replaced(doc, path, value):
    if not path:
        return value
    doc = copy.deepcopy(doc)
    at(doc, path[:-1])[path[-1]] = value
    return doc


def kind(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "uint" if v >= 0 else "int"
    return type(v).__name__


class Sweep:
    def __init__(self, kvconform, cap, listing):
        self.k = kvconform
        self.cap = cap
        self.listing = listing
        self.runs = 0
        self.failures = []
        self.stride = 1  # every stride-th change of the inputs read one process per run

    def run(self, surface, name, path, value, argv, json_out=False):
        if self.listing:
            print(" ".join(argv), flush=True)
        self.runs += 1
        try:
            r = subprocess.run(argv, capture_output=True, env=ENV, timeout=120)
        except subprocess.TimeoutExpired:
            self.failures.append((surface, name, path, value, "no answer within 120 s"))
            return
        text = (r.stdout + r.stderr).decode(errors="replace")
        why = None
        if r.returncode < 0:
            why = "killed by signal %d" % -r.returncode
        elif r.returncode not in (0, 1, 2, 4):
            why = "exit %d" % r.returncode
        elif "internal error" in text:
            why = "internal error"
        elif json_out:
            try:
                json.loads(r.stdout)
            except ValueError:
                why = "output is not JSON"
        if why:
            last = text.strip().splitlines()[-1][:200] if text.strip() else ""
            self.failures.append((surface, name, path, value, why + ": " + last))

    def batch(self, surface, entries, argv, json_files=False):
        """Runs `argv` followed by the files of `entries` ((name, path, value, file), at most
        BATCH of them) in one process: `validate` and `fixture materialize` take many files, so
        a run costs no process start (the CI build's CLI loads the CUDA libraries: ~0.15 s each).
        The batch must exit 0, 1 or 2 without an internal error or a signal and, with
        json_files, print JSON naming every file; otherwise each entry runs alone, so that the
        failure names its own document."""
        if not entries:
            return
        files = [e[3] for e in entries]
        if self.listing:
            print(" ".join(argv + files), flush=True)
        ok = True
        try:
            r = subprocess.run(argv + files, capture_output=True, env=ENV, timeout=600)
            text = (r.stdout + r.stderr).decode(errors="replace")
            ok = r.returncode in (0, 1, 2) and "internal error" not in text
            if ok and json_files:
                try:
                    ok = len(json.loads(r.stdout)["files"]) == len(files)
                except (ValueError, KeyError, TypeError):
                    ok = False
        except subprocess.TimeoutExpired:
            ok = False
        if ok:
            self.runs += len(entries)
            return
        for name, path, value, f in entries:
            self.run(surface, name, path, value, argv + [f], json_files)

    def each(self, doc, stride=1):
        """(path, value) for the root and every top-level member of `doc`, and deeper nodes up to
        cap in all (evenly spaced), each with every value of another kind; with `stride` k, every
        k-th of those pairs (the surfaces that start a process per run, sampled for --quick)."""
        paths = list(nodes(doc))
        top = [p for p in paths if len(p) <= 1]
        deeper = [p for p in paths if len(p) > 1]
        step = max(1, len(deeper) // max(1, self.cap - len(top)))
        n = 0
        for path in top + deeper[::step]:
            was = at(doc, path)
            for value in VALUES:
                if kind(was) != kind(value):
                    if n % stride == 0:
                        yield path, value
                    n += 1


def rel(path):
    return os.path.relpath(path, ROOT)


class Pending:
    """Mutated documents waiting for one process: add() writes one into `directory`; every BATCH
    of them, and close(), run `run(entries)` ((name, path, value, file) each) and delete their
    files."""

    def __init__(self, run):
        self.run = run
        self.entries = []
        self.written = 0

    def add(self, directory, suffix, text, name, path, value):
        f = os.path.join(directory, "sweep_%06d%s" % (self.written, suffix))
        self.written += 1
        open(f, "w").write(text)
        self.entries.append((name, path, value, f))
        if len(self.entries) == BATCH:
            self.close()

    def close(self):
        if self.entries:
            self.run(self.entries)
        for e in self.entries:
            os.remove(e[3])
        self.entries = []


VALIDATE = ["validate", "--format", "json"]  # reads documents and traces, many per process


def validated(s, surface):
    """A Pending whose documents `validate --format json` reads."""
    return Pending(lambda entries: s.batch(surface, entries, [s.k] + VALIDATE, True))


def sweep_validate(s, tmp, every):
    files = sorted(f for f in glob.glob(ROOT + "/fixtures/**/*.json", recursive=True)
                   if "/models/" not in f)[::every]
    out = os.path.join(tmp, "validate")
    os.makedirs(out, exist_ok=True)
    pending = validated(s, "validate")
    for f in files:
        doc = json.load(open(f))
        for path, value in s.each(doc):
            pending.add(out, ".json", json.dumps(replaced(doc, path, value)), rel(f), path, value)
    pending.close()


def sweep_invalid(s, tmp, every):
    # A patch document names its base relative to itself: the mutated copies sit at the same
    # depth of a scratch tree whose fixtures/ is the repository's.
    files = sorted(glob.glob(ROOT + "/invalid_fixtures/**/*.json", recursive=True))[::every * 6]
    tree = os.path.join(tmp, "tree")
    os.makedirs(tree, exist_ok=True)
    if not os.path.exists(os.path.join(tree, "fixtures")):
        os.symlink(os.path.join(ROOT, "fixtures"), os.path.join(tree, "fixtures"))
    outdir = os.path.join(tmp, "materialized")

    def run(entries):
        s.batch("invalid", entries, [s.k] + VALIDATE, True)
        shutil.rmtree(outdir, ignore_errors=True)
        s.batch("invalid", entries, [s.k, "fixture", "materialize", "--out-dir", outdir])

    pending = Pending(run)
    for f in files:
        doc = json.load(open(f))
        out = os.path.join(tree, os.path.dirname(rel(f)))
        os.makedirs(out, exist_ok=True)
        for path, value in s.each(doc):
            pending.add(out, ".json", json.dumps(replaced(doc, path, value)), rel(f), path, value)
    pending.close()


def sweep_check(s, tmp, every):
    # Through `validate`, which replays a trace with the same checker as `check` and takes many
    # files (ctest's trace_gating_sweep does the same).
    files = sorted(f for f in glob.glob(ROOT + "/fixtures/**/*.jsonl", recursive=True)
                   if "/race/" not in f)[::every]
    out = os.path.join(tmp, "check")
    os.makedirs(out, exist_ok=True)
    pending = validated(s, "check")
    for f in files:
        lines = open(f).read().splitlines()
        picks = {0, len(lines) // 2} if every > 1 else {0, 1, 2, len(lines) // 2, len(lines) - 1}
        for i in sorted(picks):
            if i >= len(lines) or not lines[i].strip():
                continue
            try:
                doc = json.loads(lines[i])
            except ValueError:
                continue  # a trace fixture's deliberately broken line
            for path, value in s.each(doc):
                changed = list(lines)
                changed[i] = json.dumps(replaced(doc, path, value))
                pending.add(out, ".jsonl", "\n".join(changed) + "\n", "%s:%d" % (rel(f), i + 1),
                            path, value)
    pending.close()


def sweep_model(s, tmp, every):
    model = os.path.join(tmp, "root", "fixtures", "models", "mha")
    shutil.rmtree(os.path.join(tmp, "root"), ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "fixtures", "models", "mha"), model)
    argv = [s.k, "suite", "--root", os.path.join(tmp, "root"), "--filter", "mha"]
    for name in ("hf_logits.json", "config.json"):
        target = os.path.join(model, name)
        original = open(target).read()
        doc = json.loads(original)
        for path, value in s.each(doc, s.stride):
            json.dump(replaced(doc, path, value), open(target, "w"))
            s.run("model", "fixtures/models/mha/" + name, path, value, argv)
        open(target, "w").write(original)
    target = os.path.join(model, "model.safetensors")
    raw = open(target, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
    for path, value in s.each(header, s.stride):
        text = json.dumps(replaced(header, path, value)).encode()
        open(target, "wb").write(struct.pack("<Q", len(text)) + text + data)
        s.run("model", "fixtures/models/mha/model.safetensors (header)", path, value, argv)
    open(target, "wb").write(raw)


def sweep_cli(s, tmp, every):
    out = os.path.join(tmp, "in.json")
    jobs = [
        ("fixtures/models/mha/config.json",
         [s.k, "calc", "kv-bytes", "--hf-config", out, "--dtype", "float16"]),
        ("fixtures/models/llama3/config.json", [s.k, "calc", "kv-bytes", "--hf-config", out]),
        ("fixtures/m5_1/service/ab_worked_trace.json", [s.k, "calc", "service-metrics", out]),
        ("fixtures/m5_6/handoff/transfer_protocol.json", [s.k, "handoff", "replay", out]),
        ("fixtures/m5_1/manifest/request_cache_manifest.json", [s.k, "manifest", "seal", out]),
    ]
    for f, argv in jobs:
        doc = json.load(open(os.path.join(ROOT, f)))
        for path, value in s.each(doc, s.stride):
            json.dump(replaced(doc, path, value), open(out, "w"))
            s.run("cli", f + " (" + " ".join(argv[1:3]) + ")", path, value, argv)


def sweep_merge(s, tmp, every):
    reports = []
    for name, extra in (("pass.json", []),
                        ("fail.json", ["--mutant", "finish_as_release", "--shrink-time", "2"])):
        report = os.path.join(tmp, name)
        subprocess.run([s.k, "fuzz", "races", "--programs", "20", "--ops", "40", "--seed", "1",
                        "--quiet", "--report", report] + extra, capture_output=True, env=ENV,
                       timeout=300)
        if not os.path.exists(report):
            s.failures.append(("merge", name, (), None, "fuzz races wrote no report"))
            continue
        reports.append(report)
    out = os.path.join(tmp, "shard.json")
    for report in reports:
        doc = json.load(open(report))
        for path, value in s.each(doc, s.stride):
            json.dump(replaced(doc, path, value), open(out, "w"))
            s.run("merge", os.path.basename(report), path, value, [s.k, "fuzz", "merge", out])


def sweep_history(s, tmp, every):
    f = os.path.join(ROOT, "fixtures", "race", "history.jsonl")
    lines = open(f).read().splitlines()
    out = os.path.join(tmp, "history.jsonl")
    for i in range(min(3, len(lines))):
        doc = json.loads(lines[i])
        for path, value in s.each(doc, s.stride):
            changed = list(lines)
            changed[i] = json.dumps(replaced(doc, path, value))
            open(out, "w").write("\n".join(changed) + "\n")
            s.run("history", "%s:%d" % (rel(f), i + 1), path, value,
                  [s.k, "fuzz", "check", out, "--budget", "5"])


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    listing = "--list" in args
    cap = 12 if quick else 150
    surfaces = []
    kvconform = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--cap" and i + 1 < len(args):
            cap = int(args[i + 1])
            i += 1
        elif a == "--surface" and i + 1 < len(args):
            if args[i + 1] not in SURFACES:
                sys.exit("type_sweep: unknown surface %r (one of %s)" % (args[i + 1], " ".join(SURFACES)))
            surfaces.append(args[i + 1])
            i += 1
        elif a in ("--quick", "--list"):
            pass
        elif a.startswith("-"):
            sys.exit(__doc__)
        else:
            kvconform = a
        i += 1
    kvconform = os.path.abspath(kvconform or os.path.join(ROOT, "build", "bin", "kvconform"))
    if not os.access(kvconform, os.X_OK):
        sys.exit("type_sweep: no kvconform binary at " + kvconform)
    every = 3 if quick else 1
    s = Sweep(kvconform, cap, listing)
    s.stride = 6 if quick else 1
    with tempfile.TemporaryDirectory(prefix="kvc-type-sweep-") as tmp:
        for surface in surfaces or SURFACES:
            before = s.runs
            globals()["sweep_" + surface](s, tmp, every)
            print("%-9s %6d runs" % (surface, s.runs - before), flush=True)
    print("type_sweep: %d runs, %d failed%s" % (s.runs, len(s.failures),
                                                 " (--quick sample)" if quick else ""))
    for surface, name, path, value, why in s.failures:
        print("FAIL %s %s node %s = %s: %s" % (surface, name, list(path), json.dumps(value), why))
    return 1 if s.failures else 0


if __name__ == "__main__":
    sys.exit(main())
