#!/usr/bin/env python3
"""Validates kvconform.trace/1 files against docs/schemas/trace-v1.schema.json (line 1 = header).

Usage: python3 tools/trace_schema_check.py [TRACE.jsonl ...]   (default: every fixtures/**/*.jsonl
whose first line is a kvconform.trace/1 header). Exit 0 all valid, 1 schema errors, 77 when the
python `jsonschema` package is missing (reported as SKIP by tools/cli_test.sh).
"""
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    try:
        import jsonschema
    except ImportError:
        print("SKIP: python3 module jsonschema is not installed (pip install jsonschema)")
        return 77
    schema = json.load(open(os.path.join(ROOT, "docs/schemas/trace-v1.schema.json")))
    V = jsonschema.Draft202012Validator
    V.check_schema(schema)
    header = V({"$defs": schema["$defs"], "$ref": "#/$defs/header"})
    event = V({"$defs": schema["$defs"], "$ref": "#/$defs/event"})
    files = argv or sorted(glob.glob(os.path.join(ROOT, "fixtures/**/*.jsonl"), recursive=True))
    errors = checked = 0
    for path in files:
        with open(path) as f:
            lines = f.read().splitlines()
        if not lines or json.loads(lines[0]).get("kind") != "kvconform.trace/1":
            continue
        checked += 1
        for n, line in enumerate(lines, 1):
            for e in (header if n == 1 else event).iter_errors(json.loads(line)):
                errors += 1
                print(f"{os.path.relpath(path, ROOT)}:{n}: {e.json_path}: {e.message[:300]}")
    print(f"{checked} traces checked against trace-v1.schema.json, {errors} schema errors")
    return 1 if errors or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
