#!/usr/bin/env python3
"""Example race driver (docs/driver-protocol.md): a simple single-threaded Python KV store.

Speaks kvconform.race_driver/1 on stdin/stdout: answers the hello, then one result line per op
line, in order. The store keeps its own snapshot digests (reported as "opaque"), and maps every
rejection to the registry code the M5.1 lifecycle rules name. Flags for testing the kit's
handling of broken drivers: --crash-after N, --orphan-after N (exits with status 3 while a child
it started keeps its output open), --hang-after N, --garbage-after N,
--out-of-order, --wrong-shape-after N (adds an unknown member to every later result),
--extra-member-after N (adds an unknown member beside every later result), --bad-hello
protocol-number|extra-member (a hello the protocol refuses),
--stop-reading-after N (stops reading its input but keeps answering the next ids,
so the kit's writes fill the pipe), --bug stale-publish (accepts a stale publication).
"""
import hashlib
import json
import os
import sys
import time


class Store:
    def __init__(self, layers, bug=None):
        self.layers = layers
        self.bug = bug
        self.handles = {}   # id -> dict(gen, ver, length, phase, digest, open)
        self.txns = {}      # id -> dict(fp, handle, base, start, count, state, staged)
        self.receipts = {}
        self.groups = {}

    @staticmethod
    def digest(*parts):
        return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:16]

    def snap(self, hid):
        h = self.handles[hid]
        return {"handle": hid, "generation": h["gen"], "version": h["ver"],
                "length": h["length"], "phase": h["phase"], "digest": h["digest"]}

    def advance(self, hid, content, **changes):
        h = self.handles[hid]
        h["gen"] += 1
        h["ver"] += 1 if content else 0
        h.update(changes)
        h["digest"] = self.digest(h["digest"], hid, h["gen"], h["ver"], h["length"], h["phase"])

    def live(self, hid, allow_terminal=False):
        if hid not in self.handles:
            raise Reject("LIFECYCLE_UNKNOWN_HANDLE")
        phase = self.handles[hid]["phase"]
        if phase == "RELEASED":
            raise Reject("LIFECYCLE_HANDLE_RELEASED")
        if not allow_terminal and phase != "DECODE_READY":
            raise Reject("LIFECYCLE_HANDLE_TERMINAL")
        return self.handles[hid]

    @staticmethod
    def compare_base(h, gen, digest):
        if (gen, digest) == (h["gen"], h["digest"]):
            return None
        return "LIFECYCLE_STALE_BASE" if gen < h["gen"] else "LIFECYCLE_UNKNOWN_SNAPSHOT"

    def new_handle(self, hid, length, seed):
        self.handles[hid] = {"gen": 0, "ver": 0, "length": length, "phase": "DECODE_READY",
                             "digest": self.digest(seed, hid), "open": []}

    def allocate(self, a):
        if a["handle"] in self.handles:
            raise Reject("LIFECYCLE_HANDLE_EXISTS")
        self.new_handle(a["handle"], 0, "root")
        return self.snap(a["handle"])

    def read(self, a):
        self.live(a["handle"], allow_terminal=True)
        s = self.snap(a["handle"])
        s["layers"] = [s["length"]] * self.layers
        return s

    def begin_append(self, a):
        fp = (a["txn"], a["key"], a["handle"], a["base_generation"], a["base_digest"],
              a["start"], a["count"])
        if a["txn"] in self.txns:
            t = self.txns[a["txn"]]
            if t["fp"] != fp:
                raise Reject("LIFECYCLE_RETRY_CONFLICT")
            return {"txn": a["txn"], "state": t["state"]}
        h = self.live(a["handle"])
        err = self.compare_base(h, a["base_generation"], a["base_digest"])
        if err:
            raise Reject(err)
        if a["count"] == 0:
            raise Reject("LIFECYCLE_APPEND_EMPTY")
        if a["start"] != h["length"]:
            raise Reject("LIFECYCLE_APPEND_HOLE")
        self.txns[a["txn"]] = {"fp": fp, "handle": a["handle"], "start": a["start"],
                               "count": a["count"], "base": (a["base_generation"], a["base_digest"]),
                               "state": "OPEN", "staged": set()}
        h["open"].append(a["txn"])
        return {"txn": a["txn"], "state": "OPEN"}

    def stage_layer(self, a):
        t = self.txns.get(a["txn"])
        if t is None:
            raise Reject("LIFECYCLE_TXN_UNKNOWN")
        if t["state"] in ("ABORTED", "REJECTED"):
            raise Reject("LIFECYCLE_LATE_COMPLETION")
        if t["state"] == "PUBLISHED":
            raise Reject("LIFECYCLE_TXN_FINAL")
        if self.handles[t["handle"]]["phase"] == "RELEASED":
            raise Reject("LIFECYCLE_LATE_COMPLETION")
        if a["layer"] >= self.layers:
            raise Reject("LIFECYCLE_LAYER_OUT_OF_RANGE")
        if (a["start"], a["count"]) != (t["start"], t["count"]):
            raise Reject("LIFECYCLE_LAYER_INTERVAL_MISMATCH")
        if a["layer"] in t["staged"]:
            raise Reject("LIFECYCLE_LAYER_DUPLICATE")
        t["staged"].add(a["layer"])
        if len(t["staged"]) == self.layers:
            t["state"] = "PREPARED"
        return {"state": t["state"]}

    def close(self, txn_id):
        opened = self.handles[self.txns[txn_id]["handle"]]["open"]
        if txn_id in opened:
            opened.remove(txn_id)

    def publish(self, a):
        t = self.txns.get(a["txn"])
        if t is None:
            raise Reject("LIFECYCLE_TXN_UNKNOWN")
        if t["state"] == "PUBLISHED":
            return dict(self.receipts[a["txn"]], replayed=True)
        if t["state"] in ("ABORTED", "REJECTED"):
            raise Reject("LIFECYCLE_LATE_COMPLETION")
        if t["state"] != "PREPARED":
            raise Reject("LIFECYCLE_LAYER_INCOMPLETE")
        h = self.handles[t["handle"]]
        err = self.compare_base(h, *t["base"])
        if err and not (self.bug == "stale-publish" and h["phase"] == "DECODE_READY"):
            t["state"] = "REJECTED"
            self.close(a["txn"])
            raise Reject(err)
        self.advance(t["handle"], True, length=h["length"] + t["count"])
        t["state"] = "PUBLISHED"
        self.close(a["txn"])
        s = self.snap(t["handle"])
        self.receipts[a["txn"]] = {"handle": t["handle"], "generation": s["generation"],
                                   "length": s["length"], "digest": s["digest"], "replayed": False}
        return self.receipts[a["txn"]]

    def cancel_txn(self, a):
        t = self.txns.get(a["txn"])
        if t is None:
            raise Reject("LIFECYCLE_TXN_UNKNOWN")
        if t["state"] == "PUBLISHED":
            raise Reject("LIFECYCLE_TXN_FINAL")
        if t["state"] in ("OPEN", "PREPARED"):
            t["state"] = "ABORTED"
            self.close(a["txn"])
        return {}

    def truncate(self, a):
        h = self.live(a["handle"])
        if a["length"] > h["length"]:
            raise Reject("LIFECYCLE_TRUNCATE_GROWTH")
        self.advance(a["handle"], True, length=a["length"])
        return self.snap(a["handle"])

    def fork(self, a):
        if a["group"] in self.groups:
            raise Reject("RACE_GROUP_UNKNOWN")
        parent = self.handles.get(a["handle"])
        if not (parent and parent["phase"] == "FINISHED"):
            parent = self.live(a["handle"])
        if a["prefix"] > parent["length"]:
            raise Reject("LIFECYCLE_FORK_BEYOND_PREFIX")
        kids = a["children"]
        if a["handle"] in kids or len(set(kids)) != len(kids):
            raise Reject("LIFECYCLE_FORK_ALIAS")
        if any(c in self.handles for c in kids):
            raise Reject("LIFECYCLE_HANDLE_EXISTS")
        for c in kids:
            self.new_handle(c, a["prefix"], parent["digest"])
        self.groups[a["group"]] = [{"token": "tok:" + c, "handle": c, "position": a["prefix"],
                                    "sampler": "rng:" + c} for c in kids]
        return {"children": [self.snap(c) for c in kids]}

    def reorder(self, a):
        rows = self.groups.get(a["group"])
        if rows is None:
            raise Reject("RACE_GROUP_UNKNOWN")
        if sorted(a["perm"]) != list(range(len(rows))):
            raise Reject("LIFECYCLE_REORDER_NOT_BIJECTIVE")
        self.groups[a["group"]] = [rows[p] for p in a["perm"]]  # whole coupled rows move
        return {}

    def read_row(self, a):
        rows = self.groups.get(a["group"])
        if rows is None or a["row"] >= len(rows):
            raise Reject("RACE_GROUP_UNKNOWN")
        return dict(rows[a["row"]])

    def finish(self, a):
        self.live(a["handle"])
        self.advance(a["handle"], False, phase="FINISHED")
        return self.snap(a["handle"])

    def cancel_request(self, a):
        h = self.live(a["handle"])
        self.advance(a["handle"], False, phase="CANCELLED")
        for txn_id in h["open"]:
            self.txns[txn_id]["state"] = "ABORTED"
        h["open"] = []
        return self.snap(a["handle"])

    def release(self, a):
        h = self.live(a["handle"], allow_terminal=True)
        if h["phase"] == "DECODE_READY":
            raise Reject("LIFECYCLE_RELEASE_LIVE")
        self.advance(a["handle"], True, length=0, phase="RELEASED")
        return self.snap(a["handle"])


class Reject(Exception):
    pass


def main(argv):
    opts = {"crash": None, "orphan": None, "hang": None, "garbage": None, "ooo": False, "bug": None, "stop": None,
            "wrong": None, "extra": None, "hello": None}
    i = 1
    while i < len(argv):
        flag = argv[i]
        if flag in ("--crash-after", "--hang-after", "--garbage-after", "--stop-reading-after",
                    "--wrong-shape-after", "--extra-member-after", "--orphan-after"):
            opts[flag[2:].split("-")[0]] = int(argv[i + 1])
            i += 2
        elif flag == "--out-of-order":
            opts["ooo"] = True
            i += 1
        elif flag == "--bad-hello":
            # A hello whose protocol is a number (probe 44: it aborted the kit).
            opts["hello"] = argv[i + 1]
            i += 2
        elif flag == "--bug":
            opts["bug"] = argv[i + 1]
            i += 2
        else:
            sys.exit("python_store_driver: unknown flag " + flag)
    out = sys.stdout
    store = None
    answered = 0
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "hello":
            store = Store(msg["num_layers"], opts["bug"])
            hello = {"type": "hello", "protocol": "kvconform.race_driver/1", "digests": "opaque"}
            if opts["hello"] == "protocol-number":
                hello["protocol"] = 1
            elif opts["hello"] == "extra-member":
                hello["vendor"] = "x"
            out.write(json.dumps(hello) + "\n")
            out.flush()
            continue
        if opts["crash"] is not None and answered >= opts["crash"]:
            sys.exit(3)
        if opts["orphan"] is not None and answered >= opts["orphan"]:
            if os.fork() == 0:  # the child holds stdout open, silent, until it is killed
                time.sleep(3600)
                os._exit(0)
            os._exit(3)
        if opts["hang"] is not None and answered >= opts["hang"]:
            time.sleep(3600)
        if opts["stop"] is not None and answered >= opts["stop"]:
            # Never reads again; answers the next ids in sequence, every 5 ms (a small input
            # pipe, where Linux allows it, fills sooner).
            try:
                import fcntl
                fcntl.fcntl(0, fcntl.F_SETPIPE_SZ, 4096)
            except (ImportError, AttributeError, OSError):
                pass
            next_id = msg["id"]
            try:
                while True:
                    out.write(json.dumps({"type": "result", "id": next_id, "outcome": "error",
                                          "result": {"code": "LIFECYCLE_TXN_UNKNOWN"}}) + "\n")
                    out.flush()
                    next_id += 1
                    time.sleep(0.005)
            except BrokenPipeError:
                # The host gave up on this driver and closed the pipe, as it should: leave
                # without a traceback in the test's output.
                os._exit(0)
        if opts["garbage"] is not None and answered >= opts["garbage"]:
            out.write("this is not json\n")
            out.flush()
            continue
        try:
            res = {"outcome": "ok", "result": getattr(store, msg["op"])(msg["args"])}
        except Reject as r:
            res = {"outcome": "error", "result": {"code": str(r)}}
        if opts["wrong"] is not None and answered >= opts["wrong"]:
            res["result"] = dict(res["result"], bogus=True)
        if opts["extra"] is not None and answered >= opts["extra"]:
            res["x"] = 1  # a member no result line has
        # --out-of-order: the answer names the next id, before that op was even sent.
        answer_id = msg["id"] + 1 if opts["ooo"] and answered >= 5 else msg["id"]
        out.write(json.dumps(dict(type="result", id=answer_id, **res)) + "\n")
        out.flush()
        answered += 1


if __name__ == "__main__":
    main(sys.argv)
