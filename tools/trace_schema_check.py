#!/usr/bin/env python3
"""Validates kvconform.trace/1 files against docs/schemas/trace-v1.schema.json (line 1 = header).

Usage: python3 tools/trace_schema_check.py [TRACE.jsonl ...]   (default: every fixtures/**/*.jsonl
whose first line is a kvconform.trace/1 header; other .jsonl files there are skipped). A file named
on the command line must be a kvconform.trace/1 trace: another kind, an empty or unreadable file is
an error. Exit 0 all valid, 1 errors, 77 when the python `jsonschema` package is missing (reported
as SKIP by tools/cli_test.sh).

Besides the schema, this tool checks what JSON Schema cannot express and `kvconform check` rejects
on form: lines are split on "\\n" only (a raw U+2028 or U+0085 inside a string is JSON, not a line
end; a trailing "\\r" is dropped); each line is UTF-8 without a BOM and one JSON value (no blank
line, no NaN/Infinity, no duplicate object key, no lone surrogate escape); every number is an
integer literal (JSON Schema counts 1.0 and 1e3 as integers, the checker rejects a fraction or an
exponent: INPUT_VALUE_OUT_OF_RANGE); each header source_instance and metric name is declared once,
and each request is listed once in expected_final_states;
an interval [start, end) has start <= end; an end record (kind kvconform.trace_end/1) is the last
line and counts the lines between the header and itself, and a header with end_record: true has one.
Every problem is reported as FILE:LINE: $.PATH: what was expected; the tool goes on with the next
line and the next file.
"""
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIND = "kvconform.trace/1"
END_KIND = "kvconform.trace_end/1"  # the optional end record, the trace's last line


class LineError(Exception):
    """A line that is not one well-formed JSON value (the checker's TRACE_LINE_MALFORMED)."""


class NonIntegerNumber(float):
    """A JSON number written with a fraction or an exponent; `text` keeps its spelling."""

    def __new__(cls, text):
        obj = super().__new__(cls, float(text))  # 1e400 is inf: still reported by its spelling
        obj.text = text
        return obj


def _pairs(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise LineError(f'duplicate object key "{k}"')
        obj[k] = v
    return obj


def _constant(name):
    raise LineError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_float=NonIntegerNumber,
                            parse_constant=_constant)


def _path(parts):
    """A JSONPath like jsonschema's json_path ($.payload.token, $.sources[3]), for one report style."""
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p.isidentifier():
            out += "." + p
        else:
            out += "[" + json.dumps(p) + "]"
    return out


def _lone_surrogate(s):
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def _form_errors(value, parts=()):
    """Yields (path, message) for non-integer numbers and lone surrogates anywhere in value."""
    if isinstance(value, dict):
        for k, v in value.items():
            if _lone_surrogate(k):
                yield _path(parts + (k,)), f"object key {k!r} holds a lone surrogate escape (not a Unicode string)"
            yield from _form_errors(v, parts + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _form_errors(v, parts + (i,))
    elif isinstance(value, NonIntegerNumber):
        yield (_path(parts),
               f"expected an integer literal, found {value.text} (a fraction or an exponent is "
               "INPUT_VALUE_OUT_OF_RANGE, even when the value is whole)")
    elif isinstance(value, str) and _lone_surrogate(value):
        yield _path(parts), "string holds a lone surrogate escape (not a Unicode string)"


def parse_line(raw):
    """bytes of one line (without "\\n") -> JSON value; raises LineError."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LineError(f"invalid UTF-8 at byte {e.start + 1} ({e.reason})")
    if text.startswith("\ufeff"):
        raise LineError("starts with a UTF-8 byte order mark (expected the JSON value itself)")
    if not text.strip(" \t"):
        raise LineError("blank line (expected one JSON object per line)")
    try:
        return _DECODER.decode(text)
    except LineError:
        raise
    except RecursionError:
        raise LineError("nesting too deep")
    except ValueError as e:  # json.JSONDecodeError
        raise LineError(f"not JSON: {e}")


def _unique(items, key, where):
    seen = set()
    for i, it in enumerate(items if isinstance(items, list) else []):
        v = it.get(key) if isinstance(it, dict) else None
        if isinstance(v, str):
            if v in seen:
                yield f"$.{where}[{i}].{key}", f'{key} "{v}" declared twice (INPUT_VALUE_INVALID)'
            seen.add(v)


def _printable(s):
    """Escapes control characters, U+2028-style separators and lone surrogates a trace may carry."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in s)


def json_type(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(type(v), type(v).__name__)


def _interval_errors(event):
    """[start, end) intervals (payload.interval, payload.cache_position) need start <= end."""
    payload = event.get("payload") if isinstance(event, dict) else None
    # A readiness interval's fault is the transfer plane's code (trace-format.md, kv_ready).
    code = ("HANDOFF_TRACE_INTERVAL_INVALID" if event.get("event_type") == "kv_ready"
            else "INPUT_VALUE_OUT_OF_RANGE")
    for f in ("interval", "cache_position"):
        iv = payload.get(f) if isinstance(payload, dict) else None
        if (isinstance(iv, list) and len(iv) == 2
                and all(type(x) is int for x in iv) and iv[0] > iv[1]):
            yield (_path(("payload", f)),
                   f"interval [{iv[0]}, {iv[1]}) has start > end ({code}): expected start <= end")


def display(path):
    p = os.path.abspath(path)
    return os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else path


def check_file(path, explicit, header_v, event_v, out, end_v=None):
    """Returns (checked, errors). A skipped file (default glob, not a trace) is (False, 0)."""
    name = _printable(display(path))
    errors = 0

    def err(line, pointer, msg):
        nonlocal errors
        errors += 1
        msg = _printable(msg[:300])
        out(f"{name}:{line}: {pointer}: {msg}" if line else f"{name}: {msg}")

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        if explicit:
            err(0, "", f"cannot read: {e.strerror or e}")
            return True, errors
        return False, 0
    lines = data.split(b"\n")
    cut = bool(lines) and lines[-1] != b""  # no final newline (kvconform check: TRACE_TRUNCATED)
    if lines and lines[-1] == b"":
        lines.pop()  # the final line's "\n" ends it; it does not start another
    if not lines:
        if explicit:
            err(0, "", f"empty file: expected a {KIND} header on line 1")
            return True, errors
        return False, 0

    try:
        header = parse_line(lines[0])
        header_problem = None
    except LineError as e:
        header, header_problem = None, str(e)
    if header_problem is not None:
        if not explicit:
            return False, 0  # default glob: line 1 is not JSON, so not a trace file
        err(1, "$", f"expected a {KIND} header object: {header_problem}")
    elif not isinstance(header, dict) or header.get("kind") != KIND:
        if not explicit:
            return False, 0  # default glob: not a trace file (e.g. kvconform.race_history/1)
        if not isinstance(header, dict):
            err(1, "$", f"expected a {KIND} header object, found a JSON {json_type(header)}")
        else:
            err(1, "$.kind", f'expected "{KIND}", found {json.dumps(header.get("kind"))} (not a trace file)')
        return True, errors

    end_line = 0  # the end record's line
    last_unread = False  # the last line is not one JSON value
    if cut and len(lines) > 1:
        # Like the checker, a cut event line is reported as cut and not read.
        err(len(lines), "$", "the file ends in the middle of this line (no final newline; "
            "kvconform check: TRACE_TRUNCATED)")
        lines.pop()
    for n, raw in enumerate(lines, 1):
        if end_line:  # one report for every line after the record, as the checker's
            err(n, "$", f"{len(lines) - n + 1} line(s) from here follow the end record of line "
                f"{end_line}, the trace's last line (kvconform check: TRACE_END_MISMATCH)")
            break
        if n == 1:
            if header_problem is not None:
                continue  # reported above; the events are still checked
            value = header
        else:
            try:
                value = parse_line(raw)
                last_unread = False
            except LineError as e:
                err(n, "$", str(e))
                last_unread = True
                continue
        for pointer, msg in _form_errors(value):
            err(n, pointer, msg)
        if n > 1:
            for pointer, msg in _interval_errors(value):
                err(n, pointer, msg)
        if n == 1:
            for pointer, msg in _unique(value.get("sources"), "source_instance", "sources"):
                err(n, pointer, msg)
            for pointer, msg in _unique(value.get("metrics"), "name", "metrics"):
                err(n, pointer, msg)
            for pointer, msg in _unique(value.get("expected_final_states"), "request_id",
                                        "expected_final_states"):
                err(n, pointer, msg.replace("declared twice", "listed twice"))
        # As in the checker: a line whose kind is the end record's and that names no event_id.
        is_end = (n > 1 and isinstance(value, dict) and value.get("kind") == END_KIND
                  and "event_id" not in value)
        if n > 1 and not is_end:
            # The checker cannot read an event without a string event_id (or a header-like line):
            # a missing end record is then not reported beside it.
            last_unread = not (isinstance(value, dict) and isinstance(value.get("event_id"), str))
        if is_end:
            end_line = n
            count = value.get("events")
            if type(count) is int and 0 <= count <= 0xFFFFFFFF and count != n - 2:
                err(n, "$.events", f"the end record counts {value['events']} event lines; the "
                    f"trace holds {n - 2} before it (kvconform check: TRACE_END_MISMATCH)")
        validator = header_v if n == 1 else end_v if is_end else event_v
        for e in validator.iter_errors(value):
            err(n, e.json_path, e.message)
    if (not end_line and not cut and not last_unread and header_problem is None
            and isinstance(header, dict) and header.get("end_record") is True):
        err(len(lines) + 1, "$", "the header requires an end record (end_record: true) and the "
            "trace ends without one (kvconform check: TRACE_END_MISSING)")
    return True, errors


def main(argv):
    try:
        sys.stdout.reconfigure(errors="backslashreplace")
    except AttributeError:  # not a text stream with reconfigure (e.g. replaced in a test)
        pass
    try:
        import jsonschema
    except ImportError:
        print("SKIP: python3 module jsonschema is not installed (pip install jsonschema)")
        return 77
    with open(os.path.join(ROOT, "docs/schemas/trace-v1.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    V = jsonschema.Draft202012Validator
    V.check_schema(schema)
    header = V({"$defs": schema["$defs"], "$ref": "#/$defs/header"})
    event = V({"$defs": schema["$defs"], "$ref": "#/$defs/event"})
    end = V({"$defs": schema["$defs"], "$ref": "#/$defs/end_record"})
    explicit = bool(argv)
    files = argv or sorted(glob.glob(os.path.join(ROOT, "fixtures/**/*.jsonl"), recursive=True))
    errors = checked = 0
    for path in files:
        was_checked, n = check_file(path, explicit, header, event, print, end)
        checked += was_checked
        errors += n
    print(f"{checked} traces checked against trace-v1.schema.json, {errors} schema errors")
    return 1 if errors or not checked else 0


if __name__ == "__main__":
    try:
        rc = main(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:  # the reader (e.g. head) went away: no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        rc = 1
    sys.exit(rc)
