"""murphy sandbox worker and job harness.

The worker is a warm Python that runs inside one bubblewrap sandbox per pool
slot, as uid 0 of the host user namespace but holding only the capabilities
it needs (setuid, setgid, chown, dac_read_search to look into a job's dir). It reads job requests from the control
socket (fd 3, SOCK_SEQPACKET), forks one child per job and reports the
child's exit status. The child drops to the slot's non-root uid, sets its
rlimits and runs the candidate. Everything the child reports goes to the
report pipe as lines "<nonce> <json>"; the trusted parent (Go) decides the
verdict from those lines, and ignores any line without the run's nonce.

Messages on the control socket (JSON):
  worker -> parent: {"ev": "ready", "pid", "vmsize"}, {"ev": "started", "id"},
                    {"ev": "exit", "id", "status", "utime", "stime", "maxrss"},
                    {"ev": "clean", "id", "ok", "left"}
  parent -> worker: {"op": "run", "id", "uid", "gid", "nonce", "limits": {...}}
                    with five descriptors: job, stdin, stdout, stderr, report.
"""

import array
import ast
import base64
import builtins
import ctypes
import gc
import io
import json
import linecache
import os
import random
import resource
import shutil
import signal
import socket
import sys
import time
import traceback

# Modules a typical candidate imports; loading them once in the worker makes
# every forked job start warm.
PRELOAD = (
    "abc array bisect calendar cmath collections collections.abc contextlib copy "
    "dataclasses datetime decimal enum fractions functools hashlib heapq itertools "
    "json math numbers operator queue re statistics string struct textwrap typing "
    "unicodedata threading"
).split()


def preload():
    for m in PRELOAD:
        try:
            __import__(m)
        except Exception:  # a missing optional module only costs warmth
            pass

# Bind every builtin as a module global now, so that a candidate that
# patches the builtins module (builtins.AssertionError = ..., builtins.isinstance
# = ...) cannot change what the harness calls or catches.
globals().update({_k: _v for _k, _v in vars(builtins).items() if _k not in globals()})

CTRL_FD = 3
JOB_DIR = "/tmp/job"
MAX_PAYLOAD = 64 << 20
HARNESS_FILE = os.path.abspath(__file__)
SOLUTION_FILE = "solution.py"

_type = type
_isinstance = isinstance
_len = len
_repr = repr
_bool = bool
_str = str
_getpid = os.getpid
_write = os.write
_dumps = json.dumps
_b64encode = base64.b64encode
_PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes, bytearray)
_PLAIN_CONTAINERS = (list, tuple, dict, set, frozenset)


# ---------------------------------------------------------------- worker side


def send(sock, obj):
    sock.send(json.dumps(obj).encode())


def vmsize_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def proc_uid(pid):
    try:
        with open("/proc/%s/status" % pid) as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def uid_processes(uid):
    return [p for p in os.listdir("/proc") if p.isdigit() and proc_uid(p) == uid]


def as_user(uid, gid, fn):
    """Runs fn in a forked child holding the job's uid; returns its exit code."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            fn()
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def kill_all(uid, gid):
    """Kills every process of the job's uid: kill(-1) from that uid signals
    all of them at once (the kernel holds the task list while it walks it, so
    a fork bomb cannot outrun it), daemons and setsid grandchildren included."""
    left = uid_processes(uid)
    for attempt in range(200):
        if not left:
            return 0
        as_user(uid, gid, lambda: os.kill(-1, signal.SIGKILL))
        time.sleep(0.001 * min(attempt, 20))
        left = uid_processes(uid)
    return len(left)


def remove_ipc(uid):
    """Removes System V IPC objects the job created (they outlive processes)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for name, rm in (("shm", lambda i: libc.shmctl(i, 0, None)),
                     ("sem", lambda i: libc.semctl(i, 0, 0)),
                     ("msg", lambda i: libc.msgctl(i, 0, None))):
        try:
            with open("/proc/sysvipc/" + name) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        if len(lines) < 2:
            continue
        cols = lines[0].split()
        for line in lines[1:]:
            vals = dict(zip(cols, line.split()))
            ident = vals.get("shmid") or vals.get("semid") or vals.get("msqid")
            if ident is not None and int(vals.get("uid", "-1")) == uid:
                rm(int(ident))


def wipe_dir(path):
    def onerror(func, p, exc):
        try:
            os.chmod(os.path.dirname(p) or p, 0o700)
            os.chmod(p, 0o700)
        except OSError:
            pass
        func(p)

    for entry in os.listdir(path):
        full = os.path.join(path, entry)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, onerror=onerror)
        else:
            os.unlink(full)


def cleanup(uid, gid):
    left = kill_all(uid, gid)
    ok = left == 0
    if os.path.lexists(JOB_DIR):
        if os.listdir(JOB_DIR):
            ok = as_user(uid, gid, lambda: (wipe_dir(JOB_DIR), remove_ipc(uid))) == 0 and ok
        try:
            os.rmdir(JOB_DIR)
        except OSError:
            ok = False
    else:
        as_user(uid, gid, lambda: remove_ipc(uid))
    return ok, left


def read_all(fd, limit):
    chunks, total = [], 0
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            break
        total += len(b)
        if total > limit:
            raise ValueError("job payload exceeds %d bytes" % limit)
        chunks.append(b)
    return b"".join(chunks)


def serve():
    ctrl = socket.socket(fileno=CTRL_FD)
    gc.collect()
    gc.freeze()
    send(ctrl, {"ev": "ready", "pid": os.getpid(), "vmsize": vmsize_bytes()})
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(ctrl, 1 << 16, 8)
        except OSError:
            return
        if not msg:
            return
        req = json.loads(msg)
        if req.get("op") != "run" or len(fds) != 5:
            for fd in fds:
                os.close(fd)
            send(ctrl, {"ev": "error", "id": req.get("id"), "error": "bad request"})
            continue
        run_job(ctrl, req, fds)


def run_job(ctrl, req, fds):
    job_r, stdin_r, out_w, err_w, rep_w = fds
    uid, gid = int(req["uid"]), int(req["gid"])
    try:
        payload = json.loads(read_all(job_r, MAX_PAYLOAD))
    except Exception as e:  # the parent sent it: a sandbox failure
        for fd in fds:
            os.close(fd)
        send(ctrl, {"ev": "error", "id": req["id"], "error": "payload: %s" % e})
        return
    os.close(job_r)
    if os.path.lexists(JOB_DIR):
        cleanup(uid, gid)
    os.mkdir(JOB_DIR, 0o700)
    os.chown(JOB_DIR, uid, gid)
    pid = os.fork()
    if pid == 0:
        child(req, payload, stdin_r, out_w, err_w, rep_w)  # never returns
    for fd in (stdin_r, out_w, err_w, rep_w):
        os.close(fd)
    send(ctrl, {"ev": "started", "id": req["id"]})
    _, status, ru = os.wait4(pid, 0)
    send(ctrl, {"ev": "exit", "id": req["id"], "status": status,
                "utime": ru.ru_utime, "stime": ru.ru_stime, "maxrss": ru.ru_maxrss})
    try:
        ok, left = cleanup(uid, gid)
    except Exception:
        ok, left = False, -1
        traceback.print_exc()
    send(ctrl, {"ev": "clean", "id": req["id"], "ok": ok, "left": left})


# ----------------------------------------------------------------- job child


def child(req, payload, stdin_r, out_w, err_w, rep_w):
    code = 121
    try:
        # Move the job's descriptors to 0..3 and drop everything else,
        # the control socket included.
        fds = [os.dup(fd) for fd in (stdin_r, out_w, err_w, rep_w)]
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
        os.closerange(4, 1 << 16)
        os.setsid()
        os.chdir(JOB_DIR)
        # The job, not the worker, is what an out-of-memory kill must hit.
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
        lim = req["limits"]
        budget = vmsize_bytes() + int(lim["memory_bytes"])
        resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
        cpu = int(lim["cpu_seconds"])
        # SIGXCPU at the limit (a timeout the parent recognises); SIGKILL one
        # second later if the program handles or ignores SIGXCPU.
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(lim["file_bytes"]),) * 2)
        resource.setrlimit(resource.RLIMIT_NPROC, (int(lim["procs"]),) * 2)
        resource.setrlimit(resource.RLIMIT_NOFILE, (int(lim["open_files"]),) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, 0))
        uid, gid = int(req["uid"]), int(req["gid"])
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getuid() == 0 or os.geteuid() == 0 or cap_eff() != 0:
            raise RuntimeError("privileges were not dropped")
        os.environ.clear()
        os.environ.update({
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": JOB_DIR,
            "TMPDIR": JOB_DIR,
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": str(req.get("hash_seed", 0)),
        })
        random.seed(int(req.get("seed", 0)))
        sys.stdin = sys.__stdin__ = io.TextIOWrapper(
            io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8", errors="surrogateescape")
        sys.stdout = sys.__stdout__ = io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8", errors="backslashreplace")
        sys.stderr = sys.__stderr__ = io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding="utf-8",
            errors="backslashreplace", line_buffering=True)
        emit = make_emit(req["nonce"], 3, _getpid())
        del req
        emit({"ev": "hello", "uid": os.getuid()})
        code = 0
        if payload.get("mode") == "program":
            code = run_program(emit, payload)
        else:
            code = run_function(emit, payload)
    except BaseException:
        try:
            os.write(2, ("sandbox harness failure:\n" + traceback.format_exc()).encode())
        except BaseException:
            pass
        code = 121
    finally:
        os._exit(code)


def cap_eff():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return -1


def make_emit(nonce, fd, main_pid):
    prefix = (nonce + " ").encode()

    def emit(obj):
        # A process the candidate forked must never report for the job.
        if _getpid() != main_pid:
            os._exit(0)
        data = prefix + _dumps(obj, ensure_ascii=True).encode() + b"\n"
        while data:
            data = data[_write(fd, data):]

    return emit


class NotPlain(Exception):
    """A return value that is not plain data (wrong type or a subclass)."""


def encode(v, depth=0, budget=None):
    """Strict serialisation: exact builtin types only, so an object that
    claims equality with everything (or a subclass of int/str/...) cannot
    pass. Ints are hex (no digit limit), floats are float.hex (exact)."""
    if budget is None:
        budget = [1_000_000]
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlain("value too large")
    if depth > 200:
        raise NotPlain("value nested too deeply")
    t = _type(v)
    if v is None or t is bool:
        return v
    if t is int:
        return {"i": format(v, "x")}
    if t is float:
        return {"f": v.hex()}
    if t is str:
        return v
    if t is complex:
        return {"c": [v.real.hex(), v.imag.hex()]}
    if t is bytes or t is bytearray:
        return {"b": _b64encode(bytes(v)).decode()}
    if t is list:
        return [encode(x, depth + 1, budget) for x in v]
    if t is tuple:
        return {"t": [encode(x, depth + 1, budget) for x in v]}
    if t is dict:
        return {"d": [[encode(k, depth + 1, budget), encode(x, depth + 1, budget)] for k, x in v.items()]}
    if t is set or t is frozenset:
        return {"s": [encode(x, depth + 1, budget) for x in v]}
    raise NotPlain(type_name(v))


def type_name(v):
    try:
        name = _type(v).__name__
        if _type(name) is not str:
            name = "?"
    except BaseException:
        name = "?"
    return name[:80]


def check_plain(v):
    encode(v)
    return v


def safe_repr(v, limit=2000):
    try:
        r = _repr(v)
    except BaseException as e:
        return "<unprintable %s: %s>" % (type_name(v), type_name(e))
    if _len(r) > limit:
        r = r[: limit // 2] + " ... " + r[-limit // 2:]
    return r


def format_exc(e, limit=40):
    """Traceback of a candidate error, without the harness's own frames."""
    te = traceback.TracebackException.from_exception(e, limit=-limit, capture_locals=False)
    stacks = [te]
    seen = te
    while seen.__cause__ or seen.__context__:
        seen = seen.__cause__ or seen.__context__
        stacks.append(seen)
    for s in stacks:
        s.stack = traceback.StackSummary.from_list(
            [f for f in s.stack if f.filename != HARNESS_FILE])
    return "".join(te.format())


def exc_kind(e):
    if _isinstance(e, MemoryError):
        return "memory"
    if _isinstance(e, RecursionError):
        return "recursion"
    return "error"


def clean_builtins():
    return dict(builtins.__dict__)


def register_source(name, src):
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)


def flush_std():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except BaseException:
            pass


def run_program(emit, payload):
    """A stdio program: runs as __main__ with the test input on stdin."""
    src = payload["code"]
    try:
        code = compile(src, SOLUTION_FILE, "exec")
    except (SyntaxError, ValueError) as e:
        emit({"ev": "compile_error", "error": "".join(traceback.format_exception_only(e))})
        return 1
    register_source(SOLUTION_FILE, src)
    g = {"__name__": "__main__", "__builtins__": builtins, "__file__": SOLUTION_FILE}
    del payload
    emit({"ev": "start"})
    status = 0
    try:
        exec(code, g)
    except SystemExit as e:
        if e.code is None:
            status = 0
        elif _type(e.code) is int:
            status = e.code & 0xFF
        else:
            status = 1
            try:
                print(e.code, file=sys.stderr)
            except BaseException:
                pass
    except BaseException as e:
        status = 1
        kind = "import" if _isinstance(e, ImportError) else exc_kind(e)
        tb = format_exc(e)
        try:
            sys.stderr.write(tb)
        except BaseException:
            pass
        flush_std()
        emit({"ev": "error", "kind": kind, "type": type_name(e), "tb": tb[-4000:]})
        return status
    flush_std()
    emit({"ev": "end", "code": status})
    return status


def run_function(emit, payload):
    """A python-function task: the candidate program is loaded once, then
    every test runs in order. Expected values are evaluated and sent before
    any candidate code runs, then dropped from memory."""
    tests = payload.get("tests") or []
    bclean = clean_builtins()
    pristine = {"__builtins__": dict(bclean), "__name__": "expected"}
    late = set()
    for i, t in enumerate(tests):
        exp = t.pop("expected", None)
        if exp is None or t.get("args") is None:
            continue
        try:
            v = eval(compile("(" + exp + "\n)", "<expected>", "eval"), dict(pristine))
            emit({"ev": "expect", "i": i, "v": encode(v)})
        except NotPlain as e:
            emit({"ev": "expect", "i": i, "bad": _str(e)})
        except BaseException:
            late.add(i)
            t["expected_late"] = exp
    # Nothing of the expected values stays reachable from this frame.
    v = exp = pristine = None

    src = payload["code"]
    entry = payload.get("entry_point") or ""
    setup = payload.get("setup") or ""
    try:
        code = compile(src, SOLUTION_FILE, "exec")
    except (SyntaxError, ValueError) as e:
        emit({"ev": "compile_error", "error": "".join(traceback.format_exception_only(e))})
        return 1
    register_source(SOLUTION_FILE, src)
    ns = {"__name__": "solution", "__builtins__": builtins, "__file__": SOLUTION_FILE}
    del payload
    try:
        exec(code, ns)
        if setup:
            exec(compile(setup, "<setup>", "exec"), ns)
    except SystemExit as e:
        flush_std()
        emit({"ev": "load_error", "kind": "exit", "type": "SystemExit",
              "tb": "the program called exit(%s) while loading" % safe_repr(e.code, 100)})
        return 1
    except BaseException as e:
        kind = "import" if _isinstance(e, ImportError) else exc_kind(e)
        flush_std()
        emit({"ev": "load_error", "kind": kind, "type": type_name(e), "tb": format_exc(e)[-4000:]})
        return 1
    fn = ns.get(entry)
    if not callable(fn):
        emit({"ev": "load_error", "kind": "entry", "type": "NameError",
              "tb": "the program does not define a function named %r" % entry})
        return 1
    emit({"ev": "loaded"})

    def candidate(*a, **k):
        return check_plain(fn(*a, **k))

    def test_globals():
        # Program names without shadowed builtins, and builtins from before
        # the candidate ran: `tuple(...) == ...` in a test means the real tuple.
        g = {k: v for k, v in ns.items() if k not in bclean}
        g["__builtins__"] = dict(bclean)
        g["candidate"] = candidate
        if entry:
            g[entry] = candidate
        return g

    args_of = lambda *a, **k: (a, k)  # noqa: E731
    for i, t in enumerate(tests):
        try:
            g = test_globals()
            if t.get("args") is not None:
                if i in late:
                    exp = eval(compile("(" + t.pop("expected_late") + "\n)", "<expected>", "eval"), g)
                    try:
                        emit({"ev": "expect", "i": i, "v": encode(exp)})
                    except NotPlain as e:
                        emit({"ev": "expect", "i": i, "bad": _str(e)})
                g["__murphy_args__"] = args_of
                a, k = eval(compile("__murphy_args__(" + t["args"] + "\n)", "<test>", "eval"), g)
                rv = fn(*a, **k)
                try:
                    enc = encode(rv)
                except NotPlain as e:
                    emit({"ev": "value", "i": i, "bad": _str(e)})
                    continue
                emit({"ev": "value", "i": i, "v": enc, "r": safe_repr(rv)})
            elif t.get("assert"):
                ok = run_assert(t["assert"], g, i)
                emit({"ev": "assert", "i": i, "ok": ok})
            elif t.get("check"):
                exec(compile(t["check"], "<check>", "exec"), g)
                g["check"](candidate)
                emit({"ev": "assert", "i": i, "ok": True})
            else:
                emit({"ev": "error", "i": i, "kind": "error", "type": "TestError", "tb": "empty test"})
        except NotPlain as e:
            emit({"ev": "value", "i": i, "bad": _str(e)})
        except AssertionError as e:
            emit({"ev": "assert", "i": i, "ok": False, "tb": format_exc(e)[-2000:]})
        except SystemExit as e:
            emit({"ev": "error", "i": i, "kind": "exit", "type": "SystemExit",
                  "tb": "the program called exit(%s) during the test" % safe_repr(e.code, 100)})
        except BaseException as e:
            emit({"ev": "error", "i": i, "kind": exc_kind(e), "type": type_name(e), "tb": format_exc(e)[-4000:]})
    flush_std()
    emit({"ev": "done"})
    return 0


def run_assert(text, g, i):
    tree = ast.parse(text.strip(), "<test>", "exec")
    if len(tree.body) == 1 and _isinstance(tree.body[0], ast.Assert):
        expr = ast.Expression(tree.body[0].test)
    elif len(tree.body) == 1 and _isinstance(tree.body[0], ast.Expr):
        expr = ast.Expression(tree.body[0].value)
    else:
        exec(compile(tree, "<test>", "exec"), g)
        return True
    ast.fix_missing_locations(expr)
    v = eval(compile(expr, "<test>", "eval"), g)
    if v is True:
        return True
    if v is False or v is None:
        return False
    t = _type(v)
    if t in _PLAIN_SCALARS or t in _PLAIN_CONTAINERS:
        return _bool(v)
    raise NotPlain(type_name(v))


if __name__ == "__main__":
    # --cold skips the preloading: the baseline of a fresh sandbox per job.
    if "--cold" not in sys.argv[1:]:
        preload()
    serve()
