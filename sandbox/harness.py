"""murphy sandbox: warm worker, judge and candidate harness (see SECURITY.md).

One bubblewrap sandbox per pool slot runs this file as its worker, under
uid 0 of the host user namespace holding only CAP_SETUID, CAP_SETGID,
CAP_CHOWN and CAP_DAC_READ_SEARCH, with the pool's seccomp filter. The
worker warms up and hands its loop to the fork server (forkserver.c, loaded
with ctypes), which forks the slot's JUDGE (it returns here, drops to the
slot's judge uid for good and serves the judge's socket) and per job one
CANDIDATE process, which holds the slot's job uid when it returns here to
read and run the program. The worker never reads
a job's tests; the candidate never receives a test, an expected value or a
hidden input before the judge calls it with one; the judge never runs
candidate code.

Descriptors: fd 3 is the worker's control socket, fd 4 the judge's
(SOCK_SEQPACKET, descriptors passed with SCM_RIGHTS).

  parent -> worker: a run request (forkserver.c's struct run_request) +
                    [program, stdin, stdout, stderr, chan]
  worker -> parent: {"ev": "ready", "pid", "vmsize"},
                    {"ev": "end", "id", "status", "armed", "utime", "stime", "maxrss",
                     "ok", "left", "why"} once the job's main process exited and
                    the slot was cleaned up, {"ev": "error", "id", "error"}
  parent -> judge:  {"op": "judge", "id", "frame_bytes"} + [tests, chan, report]
  judge -> parent:  {"ev": "ready"}, {"ev": "judged", "id"}; on report, one JSON
                    line per event: {"ev": "load", ...}, {"ev": "test", "i", ...},
                    {"ev": "gone", "i"}, {"ev": "done", "gone"}

chan is a stream socket between the judge and the candidate: length-prefixed
JSON frames; calls go one way, typed values (see encode) the other. Nothing
the candidate sends is more than a claim about a value it computed.
"""

import array
import binascii
import builtins
import collections
import ctypes
import gc
import json
import linecache
import os
import random
import resource
import socket
import struct
import sys
import traceback

# Modules programs commonly import, loaded once in the worker so that every
# forked job finds them warm. (A shorter list makes each fork cheaper but
# measured slower overall on HumanEval: programs and checks import them.)
PRELOAD = (
    "abc array bisect calendar cmath collections collections.abc contextlib copy "
    "dataclasses datetime decimal enum fractions functools hashlib heapq itertools "
    "json math numbers operator queue re statistics string struct textwrap typing "
    "unicodedata threading"
).split()

# The judge's own modules, imported once it runs (the worker and so every
# job's fork stay without them).
ast = decimal = fractions = importlib = None


def judge_imports():
    global ast, decimal, fractions, importlib
    import ast
    import decimal
    import fractions
    import importlib

WORKER_FD = 3
JUDGE_FD = 4
CHAN_FD = 3  # the candidate's end of chan, once it runs
MAX_PAYLOAD = 64 << 20
HARNESS_FAILURE = 121
FORK_SERVER = os.path.join(os.path.dirname(__file__), "forkserver.so")
JUDGE_MEMORY = 768 << 20
SOLUTION_FILE = "solution.py"
# The file name the harness's code carries (the workers run it compiled).
HARNESS_FILE = (lambda: None).__code__.co_filename


def warm_up(cold):
    """Imports PRELOAD (unless cold)."""
    for m in () if cold else PRELOAD:
        try:
            __import__(m)
        except Exception:  # a missing optional module only costs warmth
            pass


# The program pipe's payload: the job's random seed and the largest frame
# the judge reads (8-byte big-endian integers), then these fields, each a
# 4-byte big-endian length and that many bytes of UTF-8.
PROGRAM_FIELDS = ("mode", "entry_point", "setup", "code")
PROGRAM_FD = 5  # the program pipe, in the job's process
_HEAD = struct.Struct(">qq")


def read_program(fd):
    data = read_all(fd, MAX_PAYLOAD)
    seed, frame_bytes = _HEAD.unpack_from(data)
    prog, off = {"seed": seed, "frame_bytes": frame_bytes}, _HEAD.size
    for name in PROGRAM_FIELDS:
        (n,) = _LEN.unpack_from(data, off)
        off += 4
        if off + n > len(data):
            raise ValueError("program payload truncated in %s" % name)
        prog[name] = data[off:off + n].decode("utf-8", "replace")
        off += n
    if off != len(data):
        raise ValueError("program payload has %d bytes after its fields" % (len(data) - off))
    return prog


def send(sock, obj):
    sock.send(json.dumps(obj).encode())


def read_all(fd, limit):
    chunks, total = [], 0
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            break
        total += len(b)
        if total > limit:
            raise ValueError("payload exceeds %d bytes" % limit)
        chunks.append(b)
    return b"".join(chunks)


# The seed random holds in the worker's image: seeded once there with the
# pool's seed (nothing in the worker draws from it), so a job with that seed
# need not reseed it (~20 page faults of its process).
SEEDED = [None]


def seed_random(seed):
    random.seed(seed)
    SEEDED[0] = seed


def drop_to(uid):
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0 or os.getresgid() != (uid, uid, uid) or status_field(b"CapEff:", 16) != 0:
        raise RuntimeError("privileges were not dropped")


def read_small(path):
    """A small file's bytes, without io objects (open() and its text
    wrapper cost the worker's checks ~300 us per job)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_all(fd, MAX_PAYLOAD)
    finally:
        os.close(fd)


def status_field(name, base=10, path="/proc/self/status"):
    """A numeric field of a process's status file (-1 when absent)."""
    data = read_small(path)
    i = data.find(b"\n" + name)
    if i < 0:
        return -1
    return int(data[i + 1 + len(name):].split(None, 1)[0], base)


def vmsize_bytes():
    return status_field(b"VmSize:") * 1024


# ------------------------------------------------------------ typed values
#
# None, bool, str     JSON null, true/false, string (a str that is not valid
#                     UTF-8, i.e. holds surrogates: {"S": utf-8 surrogatepass hex})
# int {"i": hex}      float {"f": float.hex()}   complex {"c": [hex, hex]}
# bytes {"b": b64}    bytearray {"y": b64}
# list [...]          tuple {"t": [...]}         set {"s": [...]}  frozenset {"z": [...]}
# dict {"d": [[k, v]...]}  OrderedDict {"o": ...}  Counter {"C": ...}
# defaultdict {"dd": [factory name or null, [[k, v]...]]}
# deque {"q": [maxlen or null, [...]]}   namedtuple {"n": [typename, [fields], [...]]}
# Decimal {"D": str}  Fraction {"F": [hex, hex]}  range {"r": [start, stop, step]}
#
# Only exact types are encoded: a subclass or a user object is NotPlain.


class NotPlain(Exception):
    """A value that is not plain data (wrong type or a subclass)."""


class BadValue(Exception):
    """An encoded value that does not decode."""


_FACTORIES = {
    "int": int, "float": float, "complex": complex, "str": str, "bytes": bytes, "bool": bool,
    "list": list, "tuple": tuple, "dict": dict, "set": set, "frozenset": frozenset,
    "Counter": collections.Counter, "OrderedDict": collections.OrderedDict,
    "deque": collections.deque, "defaultdict": collections.defaultdict,
}
_FACTORY_NAMES = {v: k for k, v in _FACTORIES.items()}
_nt_types = {}


def _is_namedtuple(t):
    return (tuple in t.__bases__ and len(t.__bases__) == 1 and "_fields" in t.__dict__
            and "_make" in t.__dict__ and t.__module__ != "builtins")


def encode(v, depth=0, budget=None):
    if budget is None:
        budget = [2_000_000]
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlain("value too large")
    if depth > 200:
        raise NotPlain("value nested too deeply")
    t = type(v)
    if v is None or t is bool:
        return v
    if t is int:
        return {"i": format(v, "x")}
    if t is float:
        return {"f": v.hex()}
    if t is str:
        try:
            v.encode("utf-8")
            return v
        except UnicodeEncodeError:
            return {"S": v.encode("utf-8", "surrogatepass").hex()}
    e = lambda x: encode(x, depth + 1, budget)  # noqa: E731
    if t is list:
        return [e(x) for x in v]
    if t is tuple:
        return {"t": [e(x) for x in v]}
    if t is dict:
        return {"d": [[e(k), e(x)] for k, x in v.items()]}
    if t is set:
        return {"s": [e(x) for x in v]}
    if t is frozenset:
        return {"z": [e(x) for x in v]}
    if t is complex:
        return {"c": [v.real.hex(), v.imag.hex()]}
    if t is bytes:
        return {"b": binascii.b2a_base64(v, newline=False).decode()}
    if t is bytearray:
        return {"y": binascii.b2a_base64(bytes(v), newline=False).decode()}
    if t is collections.Counter:
        return {"C": [[e(k), e(x)] for k, x in v.items()]}
    if t is collections.OrderedDict:
        return {"o": [[e(k), e(x)] for k, x in v.items()]}
    if t is collections.defaultdict:
        return {"dd": [_FACTORY_NAMES.get(v.default_factory), [[e(k), e(x)] for k, x in v.items()]]}
    if t is collections.deque:
        return {"q": [v.maxlen, [e(x) for x in v]]}
    dm, fm = sys.modules.get("decimal"), sys.modules.get("fractions")
    if dm is not None and t is dm.Decimal:
        return {"D": str(v)}
    if fm is not None and t is fm.Fraction:
        return {"F": [format(v.numerator, "x"), format(v.denominator, "x")]}
    if t is range:
        return {"r": [v.start, v.stop, v.step]}
    if isinstance(t, type) and _is_namedtuple(t):
        fields = t._fields
        if type(fields) is tuple and all(type(f) is str for f in fields):
            return {"n": [str(t.__name__), list(fields), [e(x) for x in tuple.__iter__(v)]]}
    raise NotPlain(type_name(v))


def _hexint(s):
    if type(s) is not str or not 0 < len(s) <= 1 << 20:
        raise BadValue("bad int")
    return int(s, 16)


def _pairs(body, depth):
    if type(body) is not list:
        raise BadValue("pairs expected")
    out = []
    for p in body:
        if type(p) is not list or len(p) != 2:
            raise BadValue("pair expected")
        out.append((decode(p[0], depth + 1), decode(p[1], depth + 1)))
    return out


def _items(body, depth):
    if type(body) is not list:
        raise BadValue("list expected")
    return [decode(x, depth + 1) for x in body]


def decode(x, depth=0):
    """Rebuilds an encoded value from JSON data with trusted constructors only."""
    if depth > 250:
        raise BadValue("value nested too deeply")
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is list:
        return [decode(y, depth + 1) for y in x]
    if t is not dict or len(x) != 1:
        raise BadValue("unexpected %s" % t.__name__)
    (tag, body), = x.items()
    try:
        if tag == "i":
            return _hexint(body)
        if tag == "f":
            return float.fromhex(body)
        if tag == "S":
            return bytes.fromhex(body).decode("utf-8", "surrogatepass")
        if tag == "t":
            return tuple(_items(body, depth))
        if tag == "d":
            return dict(_pairs(body, depth))
        if tag == "s":
            return set(_items(body, depth))
        if tag == "z":
            return frozenset(_items(body, depth))
        if tag == "c":
            return complex(float.fromhex(body[0]), float.fromhex(body[1]))
        if tag == "b":
            return binascii.a2b_base64(body, strict_mode=True)
        if tag == "y":
            return bytearray(binascii.a2b_base64(body, strict_mode=True))
        if tag == "C":
            return collections.Counter(dict(_pairs(body, depth)))
        if tag == "o":
            return collections.OrderedDict(_pairs(body, depth))
        if tag == "dd":
            name, pairs = body
            factory = _FACTORIES.get(name) if name is not None else None
            if name is not None and factory is None:
                raise BadValue("unknown default factory")
            d = collections.defaultdict(factory)
            d.update(_pairs(pairs, depth))
            return d
        if tag == "q":
            maxlen, items = body
            if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
                raise BadValue("bad maxlen")
            return collections.deque(_items(items, depth), maxlen)
        if tag == "D":
            if type(body) is not str or len(body) > 1 << 16:
                raise BadValue("bad decimal")
            return decimal.Decimal(body)
        if tag == "F":
            return fractions.Fraction(_hexint(body[0]), _hexint(body[1]))
        if tag == "r":
            if type(body) is not list or len(body) != 3 or any(type(n) is not int for n in body):
                raise BadValue("bad range")
            return range(*body)
        if tag == "n":
            name, fields, items = body
            key = (name, tuple(fields))
            nt = _nt_types.get(key)
            if nt is None:
                if len(_nt_types) > 256:
                    _nt_types.clear()
                nt = _nt_types[key] = collections.namedtuple(name, fields)
            return nt._make(_items(items, depth))
    except BadValue:
        raise
    except RecursionError:
        raise BadValue("value nested too deeply")
    except Exception as e:
        raise BadValue("bad %r value: %s" % (tag, type(e).__name__))
    raise BadValue("unknown tag")


def type_name(v):
    try:
        name = type(v).__name__
        if type(name) is not str:
            name = "?"
    except BaseException:
        name = "?"
    return name[:80]


def safe_repr(v, limit=2000):
    try:
        r = repr(v)
        if type(r) is not str:
            r = "?"
    except BaseException as e:
        return "<unprintable %s: %s>" % (type_name(v), type_name(e))
    if len(r) > limit:
        r = r[: limit // 2] + " ... " + r[-limit // 2:]
    return r


# ------------------------------------------------------------------ frames

_LEN = struct.Struct(">I")


# One encoder and decoder for every frame (json.dumps with options builds a
# new encoder per call; json.loads of bytes first detects their encoding:
# frames are always UTF-8).
_encode_frame = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_decode_json = json.JSONDecoder().decode


def send_frame(fd, obj):
    data = _encode_frame(obj).encode("utf-8")
    view = memoryview(_LEN.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


class FrameTooLarge(Exception):
    pass


class Frames:
    """Reads length-prefixed JSON frames from a descriptor, buffered: one
    read usually holds several of a batch's answers."""

    def __init__(self, fd, limit):
        self.fd, self.limit, self.buf = fd, limit, bytearray()

    def _fill(self, n):
        while len(self.buf) < n:
            b = os.read(self.fd, max(1 << 16, min(n - len(self.buf), 1 << 20)))
            if not b:
                return False
            self.buf += b
        return True

    def next(self):
        """The next frame's JSON, or None at EOF."""
        if not self._fill(4):
            return None
        (n,) = _LEN.unpack_from(self.buf)
        if n > self.limit:
            raise FrameTooLarge(n)
        if not self._fill(4 + n):
            return None
        body = self.buf[4:4 + n].decode("utf-8")
        del self.buf[:4 + n]
        return _decode_json(body)


# ------------------------------------------------------------------ worker


class WorkerConfig(ctypes.Structure):
    """forkserver.c's struct murphy_worker."""
    _fields_ = [("ctrl_fd", ctypes.c_int32), ("judge_fd", ctypes.c_int32), ("job_uid", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("vmsize", ctypes.c_int64)]


def serve():
    args = sys.argv[1:]
    job_uid = int(args[args.index("--job-uid") + 1])
    judge_uid = int(args[args.index("--judge-uid") + 1])
    # What every job sees: bwrap's environment without the PWD it adds and
    # what only the worker's start needed, and standard streams that pass
    # undecodable bytes through. They are set here, once, because every page
    # a job's process writes is a page fault: reconfiguring the streams
    # there cost each job ~40.
    for name in ("PWD", "LD_BIND_NOW", "LD_PRELOAD"):
        os.environ.pop(name, None)
    sys.stdin.reconfigure(errors="surrogateescape")
    sys.stdout.reconfigure(errors="surrogateescape")
    if "--seed" in args:
        seed_random(int(args[args.index("--seed") + 1]))
    # PyDLL: the call keeps the GIL, and the judge's and every job's
    # process return from it into this interpreter.
    lib = ctypes.PyDLL(FORK_SERVER)
    lib.murphy_serve.argtypes = (ctypes.POINTER(WorkerConfig),)
    lib.murphy_serve.restype = ctypes.c_int
    cfg = WorkerConfig(ctrl_fd=WORKER_FD, judge_fd=JUDGE_FD, job_uid=job_uid)
    gc.collect()
    gc.freeze()
    # A job's address-space budget sits above the warm interpreter's size
    # (what a forked child starts with); measured once.
    cfg.vmsize = vmsize_bytes()
    role = lib.murphy_serve(cfg)
    if role == 1:
        candidate()  # never returns
    if role == 2:
        judge_main(judge_uid, cfg.vmsize)  # never returns
    # The control socket closed: the pool let the slot go.


def judge_requests(ctrl):
    """Yields (request, tests pipe or None, chan) from the judge's control
    socket until it closes; a request it cannot read gets an error. A
    request is one message: the tests inline, or on a pipe when too large
    for a message (slot.go's inlineTests)."""
    buf = bytearray(256 << 10)
    itemsize = array.array("i").itemsize
    anc_size = socket.CMSG_SPACE(4 * itemsize)
    while True:
        try:
            n, anc, flags, _ = ctrl.recvmsg_into([buf], anc_size)
        except OSError:
            return
        if not n:
            return
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", data[:len(data) - len(data) % itemsize]))
        try:
            req = json.loads(bytes(buf[:n])) if not flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC) else None
        except ValueError:
            req = None
        want = 1 if type(req) is dict and type(req.get("tests")) is dict else 2
        if type(req) is not dict or req.get("op") != "judge" or len(fds) != want:
            for fd in fds:
                os.close(fd)
            send(ctrl, {"ev": "error", "id": req.get("id") if type(req) is dict else None, "error": "bad request"})
            continue
        yield req, (fds[0] if want == 2 else None), fds[-1]


def judge_main(uid, vmsize):
    """The judge's process, forked by the fork server: drops to the judge's
    uid for good and serves the judge's control socket."""
    code = 0
    try:
        os.setsid()
        os.chdir("/")
        # A bounded address space: a value a program returns that expands
        # in the judge (sorted(range(10**9))) raises MemoryError there
        # instead of drawing the OOM killer.
        budget = vmsize + JUDGE_MEMORY
        resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
        drop_to(uid)
        judge_imports()
        judge_serve(socket.socket(fileno=JUDGE_FD))
    except BaseException:
        traceback.print_exc()
        code = 1
    os._exit(code)


# --------------------------------------------------------------- candidate


def candidate():
    """The job's process, once the fork server has armed it (descriptors
    0-3 are stdin, stdout, stderr and chan; the job's uid, limits and
    directory): reads the program and runs it. Its exit status is the
    job's."""
    code = HARNESS_FAILURE
    try:
        prog = read_program(PROGRAM_FD)
        os.close(PROGRAM_FD)
        # The environment (PATH, LANG, HOME, TMPDIR, PYTHONHASHSEED) is the
        # worker's, set by bwrap; the standard streams are the worker's
        # objects over descriptors 0-2 (configured in serve), which are now
        # the job's (nothing was ever read or written through them before).
        if prog["seed"] != SEEDED[0]:
            random.seed(prog["seed"])
        if prog["mode"] == "program":
            code = run_program(prog)
        else:
            code = serve_calls(prog, prog["frame_bytes"])
    except BaseException:
        try:
            os.write(2, ("sandbox harness failure:\n" + traceback.format_exc()).encode())
        except BaseException:
            pass
        code = HARNESS_FAILURE
    finally:
        os._exit(code)


def format_exc(e, limit=40):
    """Traceback of a candidate error, without the harness's own frames."""
    te = traceback.TracebackException.from_exception(e, limit=-limit, capture_locals=False)
    seen = te
    stacks = [te]
    while seen.__cause__ or seen.__context__:
        seen = seen.__cause__ or seen.__context__
        stacks.append(seen)
    for s in stacks:
        s.stack = traceback.StackSummary.from_list([f for f in s.stack if f.filename != HARNESS_FILE])
    return "".join(te.format())


def exc_kind(e):
    if isinstance(e, MemoryError):
        return "memory"
    if isinstance(e, RecursionError):
        return "recursion"
    if isinstance(e, ImportError):
        return "import"
    if isinstance(e, SystemExit):
        return "exit"
    return "error"


def failure(e):
    if isinstance(e, MemoryError):
        release_frames(e)
    return {"kind": exc_kind(e), "type": type_name(e), "tb": format_exc(e)[-4000:]}


def release_frames(e):
    """Frees what the frames of e's tracebacks hold (the list that ran the
    program out of memory, say) before the traceback is formatted: with no
    memory left, formatting fails or crawls, and whether the test's report
    arrives before the CPU limit would be up to chance."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        try:
            traceback.clear_frames(e.__traceback__)
        except BaseException:
            pass
        e = e.__cause__ or e.__context__


def flush_std():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except BaseException:
            pass


def compile_program(src):
    try:
        code = compile(src, SOLUTION_FILE, "exec")
    except (SyntaxError, ValueError) as e:
        return None, "".join(traceback.format_exception_only(e))
    linecache.cache[SOLUTION_FILE] = (len(src), None, src.splitlines(True), SOLUTION_FILE)
    return code, None


def hint(obj):
    try:
        send_frame(CHAN_FD, obj)
    except BaseException:
        pass


def run_program(prog):
    """A stdio program: runs as __main__ with the test input on stdin. Its
    exit status is the real one of this process; chan only carries hints
    (a compile error, the exception that ended it) for the feedback."""
    code, err = compile_program(prog["code"])
    if err is not None:
        hint({"compile_error": err})
        return 1
    g = {"__name__": "__main__", "__builtins__": builtins, "__file__": SOLUTION_FILE}
    del prog
    try:
        exec(code, g)
    except SystemExit as e:
        flush_std()
        if e.code is None:
            return 0
        if type(e.code) is int:
            return e.code & 0xFF
        try:
            print(e.code, file=sys.stderr)
        except BaseException:
            pass
        return 1
    except BaseException as e:
        f = failure(e)
        try:
            sys.stderr.write(f["tb"])
        except BaseException:
            pass
        flush_std()
        hint({"error": f})
        return 1
    flush_std()
    return 0


def serve_calls(prog, frame_bytes):
    """A python-function program: loads once, then answers the judge's calls
    one at a time until it says end."""
    code, err = compile_program(prog["code"])
    if err is not None:
        send_frame(CHAN_FD, {"compile_error": err})
        return 1
    entry = prog.get("entry_point") or ""
    setup = prog.get("setup") or ""
    ns = {"__name__": "solution", "__builtins__": builtins, "__file__": SOLUTION_FILE}
    del prog
    try:
        exec(code, ns)
        if setup:
            exec(compile(setup, "<setup>", "exec"), ns)
    except BaseException as e:
        flush_std()
        f = failure(e)
        if f["kind"] == "exit":
            f["tb"] = "the program called exit(%s) while loading" % safe_repr(e.code, 100)
        send_frame(CHAN_FD, {"load_error": f})
        return 1
    if not callable(ns.get(entry)):
        send_frame(CHAN_FD, {"load_error": {"kind": "entry", "type": "NameError",
                                            "tb": "the program does not define a function named %r" % entry}})
        return 1
    # What the program imported, for tests that use it; the judge imports
    # its own copies (from math import isclose -> math.isclose).
    modules, imports = {}, {}
    for k, v in list(ns.items())[:10000]:
        if type(k) is not str or k.startswith("__"):
            continue
        if type(v) is type(os):
            modules[k] = str(getattr(v, "__name__", ""))
        elif callable(v):
            mod = getattr(v, "__module__", None)
            if type(mod) is str and mod not in ("solution", "builtins"):
                imports[k] = [mod, str(getattr(v, "__qualname__", k))]
    send_frame(CHAN_FD, {"loaded": True, "modules": dict(list(modules.items())[:200]),
                         "imports": dict(list(imports.items())[:1000])})
    frames = Frames(CHAN_FD, frame_bytes)
    while True:
        msg = frames.next()
        if msg is None or "end" in msg:
            break
        # A batch of calls is answered one frame per call, each as soon as
        # it returns.
        for name, a, k in msg["calls"]:
            reply = answer(ns.get(name), decode(a), decode(k))
            send_frame(CHAN_FD, reply)
            if reply.get("err", {}).get("kind") == "memory":
                # Out of memory ends the run, as the memory limit kills a
                # process: whether later tests would fit in what is left of
                # the CPU limit is up to how fast the machine allocates.
                flush_std()
                return 1
    flush_std()
    return 0


def answer(fn, args, kwargs):
    try:
        rv = fn(*args, **kwargs)
    except BaseException as e:
        flush_std()
        f = failure(e)
        if f["kind"] == "exit":
            f["tb"] = "the program called exit(%s) during the test" % safe_repr(e.code, 100)
        return {"err": f}
    try:
        return {"v": encode(rv)}
    except NotPlain as e:
        return {"bad": str(e), "r": safe_repr(rv)}
    except RecursionError:
        return {"bad": "value nested too deeply", "r": ""}


# ------------------------------------------------------------------- judge


class CandidateFailed(BaseException):
    """The candidate raised, or answered with something that is not a value.
    A BaseException, so that test code's `except Exception` cannot swallow it."""

    def __init__(self, status, info):
        BaseException.__init__(self, status)
        self.status, self.info = status, info


class CandidateGone(BaseException):
    """The candidate process ended (or broke the protocol) during a call."""


class TaskError(Exception):
    """The task's own test code failed without the candidate's involvement."""


class Conn:
    """The judge's end of chan."""

    def __init__(self, fd, frame_bytes):
        self.fd, self.frames, self.gone = fd, Frames(fd, frame_bytes), False

    def recv(self):
        """The candidate's next frame as a dict."""
        if self.gone:
            raise CandidateGone()
        try:
            m = self.frames.next()
        except FrameTooLarge:
            self.gone = True
            raise CandidateFailed("notplain", {"bad": "return value larger than the report limit"})
        except Exception:  # malformed, too deep, out of memory: never the judge's failure
            m = None
        if type(m) is not dict:
            self.gone = True
            raise CandidateGone()
        return m

    def send(self, msg):
        if self.gone:
            raise CandidateGone()
        try:
            send_frame(self.fd, msg)
        except OSError:
            self.gone = True
            raise CandidateGone()

    def result(self):
        """The value of the call the candidate answers next."""
        m = self.recv()
        if "v" in m:
            try:
                return decode(m["v"])
            except (BadValue, RecursionError) as e:
                raise CandidateFailed("notplain", {"bad": "malformed value (%s)" % type_name(e) if not isinstance(e, BadValue) else "malformed value (%s)" % e})
            except MemoryError:
                raise CandidateFailed("error", {"kind": "memory", "type": "MemoryError",
                                                "tb": "the value the program returned exhausted the judge's memory"})
        if "err" in m and type(m["err"]) is dict:
            raise CandidateFailed("error", {k: str(m["err"].get(k, ""))[:4000] for k in ("kind", "type", "tb")})
        if "bad" in m:
            raise CandidateFailed("notplain", {"bad": str(m["bad"])[:200], "r": str(m.get("r", ""))[:2000]})
        self.gone = True
        raise CandidateGone()

    def call(self, name, args, kwargs):
        self.send({"calls": [call_msg(name, args, kwargs)]})
        return self.result()


def call_msg(name, args, kwargs):
    try:
        return [name, encode(list(args)), encode(dict(kwargs))]
    except NotPlain as e:
        raise TaskError("the test passes a %s, which cannot be sent to the program" % e)


class Proxy:
    """Stands for one of the candidate's functions in the judge's namespace."""

    __slots__ = ("_conn", "_name", "__name__")

    def __init__(self, conn, name):
        self._conn, self._name, self.__name__ = conn, name, name

    def __call__(self, *args, **kwargs):
        return self._conn.call(self._name, args, kwargs)

    def __repr__(self):
        return "<function %s>" % self._name


_code_cache = collections.OrderedDict()


def cached(key, build):
    """build(), remembered under key: a group's samples run the same task's
    tests one after another; room for a few hundred tasks' worth of them."""
    hit = _code_cache.get(key)
    if hit is None:
        hit = _code_cache[key] = build()
        if len(_code_cache) > 8192:
            _code_cache.popitem(last=False)
    else:
        _code_cache.move_to_end(key)
    return hit


def cached_compile(src, name, mode):
    return cached((src, name, mode), lambda: compile(src, name, mode))


def literal_value(src):
    """(value,) of an expected value's text that is a Python literal, else
    (): remembered per task text, so that most call-and-compare tests are
    evaluated once, not per job. The value is only ever compared, which
    never changes a built-in value."""
    def build():
        try:
            return (ast.literal_eval(ast.parse("(" + src + "\n)", "<expected>", "eval").body),)
        except Exception:
            return ()

    return cached((src, "<expected>", "literal"), build)


def literal_call(name, src):
    """The call message of arguments text whose every argument is a
    literal, else False; remembered like literal_value."""
    def build():
        try:
            call = ast.parse("f(" + src + "\n)", "<test>", "eval").body
            if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args) \
                    or any(k.arg is None for k in call.keywords):
                return False
            args = [ast.literal_eval(a) for a in call.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
            return call_msg(name, args, kwargs)
        except Exception:
            return False

    return cached((name, src, "literal call"), build)


def compiled_assert(src):
    """An assert test as ("eval", its condition) when it is one assert or
    expression (so that a false condition is a wrong answer whatever the
    message), else ("exec", the statements)."""
    def build():
        tree = ast.parse(src.strip(), "<test>", "exec")
        if len(tree.body) == 1 and isinstance(tree.body[0], (ast.Assert, ast.Expr)):
            node = tree.body[0]
            expr = ast.Expression(node.test if isinstance(node, ast.Assert) else node.value)
            ast.fix_missing_locations(expr)
            return "eval", compile(expr, "<test>", "eval")
        return "exec", compile(tree, "<test>", "exec")

    return cached((src, "<test>", "assert"), build)


# The report goes to murphy in messages of about this many bytes at most
# ("report" ones, then "judged"): a message must fit the socket's buffer.
REPORT_CHUNK = 48 << 10


def judge_serve(ctrl):
    gc.collect()
    gc.freeze()
    send(ctrl, {"ev": "ready"})
    pristine = dict(builtins.__dict__)
    for req, tests_r, chan in judge_requests(ctrl):
        report = []
        try:
            if tests_r is None:
                payload = req["tests"]
            else:
                payload = _decode_json(read_all(tests_r, MAX_PAYLOAD).decode("utf-8"))
                os.close(tests_r)
            # The builtins module is the judge's own; restore it in case a
            # task's code changed it.
            builtins.__dict__.update(pristine)
            judge_job(report, payload, Conn(chan, int(req["frame_bytes"])))
        except BaseException:
            report.append({"ev": "error", "error": "judge: " + traceback.format_exc()[-2000:]})
        finally:
            os.close(chan)
        send_report(ctrl, req["id"], report)


def send_report(ctrl, job_id, report):
    """Sends the report's events, REPORT_CHUNK bytes at a time."""
    head, chunk, size = '{"ev":"report","id":%d,"report":[' % job_id, [], 0
    for ev in report:
        e = json.dumps(ev)
        if chunk and size + len(e) > REPORT_CHUNK:
            ctrl.send((head + ",".join(chunk) + "]}").encode())
            chunk, size = [], 0
        chunk.append(e)
        size += len(e) + 1
    ctrl.send(('{"ev":"judged","id":%d,"report":[' % job_id + ",".join(chunk) + "]}").encode())


class TestSpace:
    """The namespace tests run in: the task's helpers (its prompt's code)
    and setup, what the program imported, the candidate's proxy, and the
    random seed. Built on first use, so that a job whose tests are all
    literal call-and-compare ones never builds it; a task with setup code
    builds it before any test (a failing setup fails every test)."""

    def __init__(self, payload):
        self.payload, self.g, self.loaded, self.cand = payload, None, None, None
        self.task_err = None

    def ns(self):
        if self.g is None:
            p = self.payload
            random.seed(int(p.get("seed", 0)))
            g = self.g = {"__builtins__": builtins, "__name__": "__test__"}
            if p.get("helpers"):
                # The task's prompt where it is code (HumanEval's defines
                # helpers that checks call): whatever it defines before
                # any failure stays.
                exec_helpers(p["helpers"], g)
            if p.get("setup"):
                try:
                    exec(cached_compile(p["setup"], "<setup>", "exec"), g)
                except BaseException as e:
                    self.task_err = "the task's setup code failed: %s" % test_tb(e)
        if self.cand is not None and self.loaded is not None:
            loaded, self.loaded = self.loaded, None
            bind_program_names(self.g, loaded)
            entry = self.cand._name
            self.g[entry] = self.g["candidate"] = self.cand
            self.g["__murphy_args__"] = lambda *a, **k: (a, k)
        return self.g


def judge_job(report, payload, conn):
    """Runs one job's tests against the candidate, appending events to report."""
    entry = payload.get("entry_point") or ""
    space = TestSpace(payload)
    if payload.get("setup"):
        space.ns()
    try:
        first = conn.recv()
    except (CandidateGone, CandidateFailed):
        report.append({"ev": "load", "gone": True})
        report.append({"ev": "done", "gone": True})
        return
    if "loaded" not in first:
        ev = {"ev": "load"}
        if "compile_error" in first:
            ev["compile_error"] = str(first["compile_error"])[:8000] or "SyntaxError"
        elif type(first.get("load_error")) is dict:
            ev["load_error"] = {k: str(first["load_error"].get(k, ""))[:4000] for k in ("kind", "type", "tb")}
        else:
            ev["gone"] = True
        report.append(ev)
        report.append({"ev": "done", "gone": True})
        return
    report.append({"ev": "load", "loaded": True})
    space.loaded, space.cand = first, Proxy(conn, entry)
    tests = payload.get("tests") or []
    i = 0
    while i < len(tests):
        # Consecutive value tests of one visibility go out as one batch:
        # hidden inputs only after every visible test is done.
        j = i + 1
        if tests[i].get("kind") == "value":
            while j < len(tests) and tests[j].get("kind") == "value" and tests[j].get("hidden") == tests[i].get("hidden"):
                j += 1
        if not run_group(report, tests, i, j, space, conn):
            report.append({"ev": "done", "gone": True})
            return
        i = j
    try:
        conn.send({"end": True})
    except CandidateGone:
        pass
    report.append({"ev": "done", "gone": False})


def exec_helpers(src, g):
    """Runs a prompt's code; one that ends in the bare signature the program
    completes gets a body first. Text that is not code defines nothing."""
    for text in (src, src.rstrip() + "\n    pass\n"):
        try:
            code = cached_compile(text, "<task>", "exec")
        except (SyntaxError, ValueError):
            continue
        try:
            exec(code, g)
        except BaseException:
            pass
        return


def bind_program_names(g, loaded):
    """Makes what the program imported visible to the tests (MBPP tests
    run in the program's namespace and use its `import math`) without any
    object of the program: a module it imported is imported again by the
    judge (standard library only), and a function it imported is taken from
    that module. Names the task defines and builtins win. Of the functions
    the program defined, only the entry point is callable (a proxy): a test
    never trusts the program for a helper such as its own isclose."""
    def free(n):
        return type(n) is str and n.isidentifier() and n not in g and n not in builtins.__dict__

    def stdlib(mod):
        return type(mod) is str and mod.split(".")[0] in sys.stdlib_module_names and not mod.startswith("_")

    mods = loaded.get("modules")
    for n, mod in (mods.items() if type(mods) is dict else ()):
        if free(n) and stdlib(mod):
            try:
                g[n] = importlib.import_module(mod)
            except BaseException:
                pass
    imps = loaded.get("imports")
    for n, ref in (imps.items() if type(imps) is dict else ()):
        if free(n) and type(ref) is list and len(ref) == 2 and stdlib(ref[0]) and type(ref[1]) is str:
            try:
                obj = importlib.import_module(ref[0])
                for part in ref[1].split("."):
                    if not part.isidentifier() or part.startswith("_"):
                        raise AttributeError(part)
                    obj = getattr(obj, part)
                g[n] = obj
            except BaseException:
                pass


def judged(fn):
    """The test event fields for running fn, which returns them; raises
    CandidateGone when the program went away meanwhile. Nothing the program
    sent can make this the judge's failure."""
    try:
        return fn()
    except CandidateFailed as e:
        return dict(e.info, status=e.status)
    except TaskError as e:
        return {"status": "task", "tb": str(e)[:4000]}
    except MemoryError:
        # What the program returned does not fit the judge's memory.
        gc.collect()
        return {"status": "error", "kind": "memory", "type": "MemoryError",
                "tb": "the value the program returned exhausted the judge's memory"}
    except CandidateGone:
        raise
    except BaseException as e:
        # An assertion, or the test's own code raising on a value the
        # program returned (comparing a list with an int): the program's
        # answer is wrong, not the task.
        return {"status": "wrong", "tb": test_tb(e)}


def run_group(report, tests, i, j, space, conn):
    """Runs tests[i:j], one assert or check test or a batch of value tests;
    returns False when the candidate went away."""
    def task_failed():
        raise TaskError(space.task_err)

    if tests[i].get("kind") != "value":
        try:
            ev = judged(task_failed if space.task_err is not None else lambda: run_test(tests[i], space.ns()))
        except CandidateGone:
            report.append({"ev": "gone", "i": i})
            return False
        report.append(dict(ev, ev="test", i=i))
        return True
    # Every call of the batch goes out in one frame; arguments that fail to
    # evaluate (or call the program, and it fails) are that test's result.
    calls, results = [], {}
    entry = space.cand._name

    def add_call(k):
        msg = literal_call(entry, tests[k]["args"])
        if msg is False:
            args, kwargs = eval_args(tests[k], space.ns())
            msg = call_msg(entry, args, kwargs)
        calls.append(msg)

    for k in range(i, j):
        try:
            ev = judged(task_failed if space.task_err is not None else lambda: add_call(k))
        except CandidateGone:
            report.append({"ev": "gone", "i": k})
            return False
        if ev is not None:
            results[k] = ev
    if calls:
        try:
            conn.send({"calls": calls})
        except CandidateGone:
            report.append({"ev": "gone", "i": min(set(range(i, j)) - set(results))})
            return False
    for k in range(i, j):
        if k not in results:
            try:
                results[k] = judged(lambda: compare(conn.result(), tests[k], space))
            except CandidateGone:
                report.append({"ev": "gone", "i": k})
                return False
        report.append(dict(results[k], ev="test", i=k))
    return True


def test_tb(e):
    return "".join(traceback.format_exception_only(e)).strip()[-2000:]


def eval_args(t, g):
    try:
        return eval(cached_compile("__murphy_args__(" + t["args"] + "\n)", "<test>", "eval"), g)
    except (CandidateGone, CandidateFailed):
        raise
    except BaseException as e:
        raise TaskError("the test's arguments do not evaluate: %s" % test_tb(e))


def compare(rv, t, space):
    lit = literal_value(t["expected"])
    try:
        exp = lit[0] if lit else eval(cached_compile("(" + t["expected"] + "\n)", "<expected>", "eval"), space.ns())
    except (CandidateGone, CandidateFailed):
        raise
    except BaseException as e:
        raise TaskError("the expected value does not evaluate: %s" % test_tb(e))
    try:
        ok = rv == exp
    except BaseException:
        ok = False
    if ok is True:
        return {"status": "passed"}
    return {"status": "wrong", "r": safe_repr(rv)}


def run_test(t, g):
    """Runs an assert or a whole check() test in g; the candidate is g's
    proxy."""
    kind = t.get("kind")
    if kind == "assert":
        mode, code = compiled_assert(t["code"])
        if mode == "eval":
            ok = bool(eval(code, g))
        else:
            exec(code, g)
            ok = True
        return {"status": "passed" if ok else "wrong"}
    if kind == "check":
        exec(cached_compile(t["code"], "<check>", "exec"), g)
        g["check"](g["candidate"])
        return {"status": "passed"}
    raise TaskError("unknown test kind %r" % kind)


if __name__ == "__main__":
    # --cold skips the preloading (a sandbox started for a single job).
    warm_up("--cold" in sys.argv[1:])
    serve()
