#!/usr/bin/env python3
"""Judges HumanEval programs for the simulated policy's measurement test.

A measurement aid only, not the project's executor (that is the sandbox
package): it runs trusted-enough mutants of canonical solutions in this
process with a per-program alarm. Reads JSON lines {"id", "code", "test",
"entry"} on stdin, writes {"id", "passed", "kind", "error", "line"} lines.
"""
import json
import signal
import sys
import traceback


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def judge(job):
    g = {"__name__": "candidate"}
    try:
        code = compile(job["code"], "candidate.py", "exec")
    except SyntaxError as e:
        return {"kind": "compile_error", "error": "SyntaxError: %s" % e.msg}
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        exec(code, g)
        if job["entry"] not in g:
            return {"kind": "runtime_error", "error": "NameError: name '%s' is not defined" % job["entry"]}
        exec(job["test"], g)
        g["check"](g[job["entry"]])
        return {"passed": True, "kind": "passed"}
    except Timeout:
        return {"kind": "timeout", "error": "timed out after 1s"}
    except AssertionError:
        tb = traceback.extract_tb(sys.exc_info()[2])
        line = tb[-1].line if tb else ""
        return {"kind": "wrong_answer", "error": "AssertionError", "line": line}
    except BaseException as e:  # noqa: BLE001 - any failure of the program
        return {"kind": "runtime_error", "error": "%s: %s" % (type(e).__name__, str(e)[:200])}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    sys.setrecursionlimit(3000)
    out = sys.stdout
    sys.stdout = open("/dev/null", "w")
    for raw in sys.stdin:
        job = json.loads(raw)
        res = {"passed": False, "line": "", "error": ""}
        res.update(judge(job))
        res["id"] = job["id"]
        out.write(json.dumps(res) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
