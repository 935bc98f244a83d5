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
JSON frames; calls go one way (arguments as typed values with object
numbers and stand-ins for the program's names, or a value test's argument
text), typed values the other (see Encoder: references to the call's
numbered arguments and their new state come back too). Nothing the
candidate sends is more than a claim about a value it computed.

The judge forked by the fork server becomes a fresh interpreter at once
(harness.py --judge, no LD_PRELOAD): it never runs on the worker's image or
the fork server's arena allocator.
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


# How deep a value may nest (a linked list of 3,000 nodes is 3,000 deep).
# Encoding, decoding and comparing it run at DEEP_LIMIT frames: pure
# Python calls take no C stack in 3.11, and the C recursion of json and of
# comparisons at this depth stays far inside the main thread's stack.
MAX_DEPTH = 3000
DEEP_LIMIT = 20000


class deep:
    """Runs its block at a recursion limit of at least DEEP_LIMIT, then
    restores the limit the block found."""

    __slots__ = ("old",)

    def __enter__(self):
        self.old = sys.getrecursionlimit()
        if self.old < DEEP_LIMIT:
            sys.setrecursionlimit(DEEP_LIMIT)

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.old)


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
# Builtin types travel by name ({"T": "int"}): a test may pass int, and a
# program may return it.
_BUILTIN_TYPES = {k: v for k, v in builtins.__dict__.items() if type(v) is type and not k.startswith("_")}
_BUILTIN_TYPE_NAMES = {v: k for k, v in _BUILTIN_TYPES.items()}
_nt_types = {}
# The containers whose identity and contents a call can change: they carry
# an object number ("@") where identity matters, and are written back in place.
_MUTABLE = (list, dict, set, bytearray, collections.deque, collections.OrderedDict,
            collections.Counter, collections.defaultdict)
_HEAPTYPE = 1 << 9
_NOT_RECORDS = set()  # the harness's own classes (filled below)


def _is_namedtuple(t):
    return (tuple in t.__bases__ and len(t.__bases__) == 1 and "_fields" in t.__dict__
            and "_make" in t.__dict__ and t.__module__ != "builtins")


def _is_record_type(t):
    """A class defined in Python code (the program's or the task's) that
    derives from object alone: its instances travel as records."""
    try:
        if t in _NOT_RECORDS:
            return False
        mro = type.__dict__["__mro__"].__get__(t)
        return all(c is object or c.__flags__ & _HEAPTYPE for c in mro) and not _is_namedtuple(t)
    except BaseException:
        return False


def _fields_of(v):
    """An instance's attributes: its __dict__ and its slots."""
    out = []
    try:
        d = object.__getattribute__(v, "__dict__")
    except AttributeError:
        d = {}
    if type(d) is not dict:
        raise NotPlain("object with a strange __dict__")
    out.extend(d.items())
    for c in type.__dict__["__mro__"].__get__(type(v)):
        slots = c.__dict__.get("__slots__", ())
        for s in (slots,) if type(slots) is str else slots:
            if type(s) is str and s not in ("__dict__", "__weakref__"):
                try:
                    out.append((s, object.__getattribute__(v, s)))
                except AttributeError:
                    pass
    return out


class Encoder:
    """Typed values (see the table above). memo maps id() of objects that
    have a number to it: they are encoded as {"^": k}. With mark, every
    mutable container and record met is numbered ({"@": [k, value]}), in
    the order met: the judge marks a call's arguments so that the candidate
    can name them back. remote encodes the judge's stand-ins for the
    program's names (RemoteName, Deferred); None elsewhere."""

    __slots__ = ("memo", "objs", "mark", "budget", "remote", "handles")

    def __init__(self, memo=None, mark=False, remote=None, handles=None):
        self.memo = memo
        self.objs = []
        self.mark = mark
        self.budget = 2_000_000
        self.remote = remote
        # The candidate's: the objects of its classes it answered with, so
        # that a test can call their methods (Solution().twoSum(...)).
        self.handles = handles

    def enc(self, v, depth=0):
        self.budget -= 1
        if self.budget < 0:
            raise NotPlain("value too large")
        if depth > MAX_DEPTH:
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
        if self.memo is not None and (t in _MUTABLE or _is_record_type(t)):
            k = self.memo.get(id(v))
            if k is not None:
                return {"^": k}
            if self.mark:
                k = self.memo[id(v)] = len(self.memo)
                self.objs.append(v)
                return {"@": [k, self.body(v, t, depth)]}
        return self.body(v, t, depth)

    def body(self, v, t, depth):
        e = lambda x: self.enc(x, depth + 1)  # noqa: E731
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
        if t is type and v in _BUILTIN_TYPE_NAMES:
            return {"T": _BUILTIN_TYPE_NAMES[v]}
        if t is Record:
            if v._h is not None and self.remote is not None:
                return {"H": v._h[1]}  # the candidate's own object again
            return {"R": [v._name, [[k, e(x)] for k, x in v._fields.items()]]}
        if self.remote is not None and t in (RemoteName, Deferred):
            return self.remote(self, v, depth)
        if isinstance(t, type) and _is_namedtuple(t):
            fields = t._fields
            if type(fields) is tuple and all(type(f) is str for f in fields):
                return {"n": [str(t.__name__), list(fields), [e(x) for x in tuple.__iter__(v)]]}
        if _is_record_type(t):
            name = type.__dict__["__qualname__"].__get__(t)
            body = [str(name)[:200], [[str(k), e(x)] for k, x in _fields_of(v) if type(k) is str]]
            if self.handles is not None and len(self.handles) < 100000:
                body.append(len(self.handles))
                self.handles.append(v)
            return {"R": body}
        raise NotPlain(type_name(v))


def encode(v):
    return Encoder().enc(v)


class Record:
    """An instance of a class the program defined, rebuilt from the data it
    sent: its class's qualified name and its attributes, compared
    structurally (never through the program's __eq__)."""

    __slots__ = ("_name", "_fields", "_h", "__weakref__")

    def __init__(self, name, fields, h=None):
        # h: (the judge's connection, the candidate's number of the object)
        # when it can be asked to run the object's methods.
        self._name, self._fields, self._h = name, fields, h

    def __eq__(self, other):
        if type(other) is not Record:
            return NotImplemented
        return self._name == other._name and self._fields == other._fields

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(self._name)

    def __getattr__(self, name):
        """An attribute the object had; else, for an object the candidate
        still holds, its method, run by the candidate (a call of the
        program, like the entry point's)."""
        try:
            return object.__getattribute__(self, "_fields")[name]
        except KeyError:
            h = object.__getattribute__(self, "_h")
            if h is None or name.startswith("__"):
                raise AttributeError(name) from None
            return RemoteMethod(h[0], h[1], name)

    def __repr__(self):
        return "%s(%s)" % (self._name, ", ".join("%s=%s" % (k, safe_repr(v, 200)) for k, v in self._fields.items()))


class RemoteMethod:
    """A method of an object the candidate answered with."""

    __slots__ = ("_conn", "_h", "_name")

    def __init__(self, conn, h, name):
        self._conn, self._h, self._name = conn, h, name

    def __call__(self, *args, **kwargs):
        return self._conn.call(self._name, args, kwargs, handle=self._h)

    def __repr__(self):
        return "<method %s>" % self._name


def _hexint(s):
    if type(s) is not str or not 0 < len(s) <= 1 << 20:
        raise BadValue("bad int")
    return int(s, 16)


class Decoder:
    """Rebuilds an encoded value from JSON data with trusted constructors
    only. table: the numbered objects ("^" refers to them); marks: whether
    "@" may number new ones (the candidate decoding the judge's arguments);
    resolve(name) the program's or the task's class for a record, or None
    (a Record then); remote(tag, body, dec): the candidate's evaluation of
    the judge's stand-ins ("N", "new"), None in the judge."""

    __slots__ = ("table", "marks", "resolve", "remote", "conn")

    def __init__(self, table=None, marks=False, resolve=None, remote=None, conn=None):
        self.table = table if table is not None else []
        self.marks, self.resolve, self.remote, self.conn = marks, resolve, remote, conn

    def d(self, x, depth=0):
        if depth > MAX_DEPTH + 50:
            raise BadValue("value nested too deeply")
        t = type(x)
        if x is None or t is bool or t is str:
            return x
        if t is list:
            return [self.d(y, depth + 1) for y in x]
        if t is not dict or len(x) != 1:
            raise BadValue("unexpected %s" % t.__name__)
        (tag, body), = x.items()
        try:
            if tag == "^":
                if type(body) is not int or not 0 <= body < len(self.table):
                    raise BadValue("bad reference")
                return self.table[body]
            if tag == "@":
                if not self.marks or type(body) is not list or len(body) != 2 or body[0] != len(self.table):
                    raise BadValue("bad object number")
                return self.fresh(body[1], depth)
            return self.value(tag, body, depth, None)
        except BadValue:
            raise
        except RecursionError:
            raise BadValue("value nested too deeply")
        except (CandidateGone, CandidateFailed):
            raise
        except Exception as e:
            if self.remote is not None:
                raise  # the candidate's own error, reported as its answer
            raise BadValue("bad %r value: %s" % (tag, type(e).__name__))

    def fresh(self, x, depth):
        """A numbered object: made empty and registered before its
        contents decode (they may refer to it)."""
        if type(x) is list:
            obj = []
            self.table.append(obj)
            obj.extend(self.d(y, depth + 1) for y in x)
            return obj
        if type(x) is not dict or len(x) != 1:
            raise BadValue("bad numbered object")
        (tag, body), = x.items()
        shells = {"d": dict, "s": set, "y": bytearray, "C": collections.Counter, "o": collections.OrderedDict}
        if tag in shells:
            obj = shells[tag]()
        elif tag == "dd":
            obj = collections.defaultdict()
        elif tag == "q":
            obj = collections.deque()
        elif tag == "R":
            obj = self.record_shell(body)
        else:
            raise BadValue("bad numbered object")
        self.table.append(obj)
        return self.value(tag, body, depth, obj)

    def record_shell(self, body):
        if type(body) is not list or len(body) not in (2, 3) or type(body[0]) is not str:
            raise BadValue("bad record")
        cls = self.resolve(body[0]) if self.resolve is not None else None
        if cls is None:
            h = None
            if len(body) == 3 and self.conn is not None:
                if type(body[2]) is not int or body[2] < 0:
                    raise BadValue("bad record")
                h = (self.conn, body[2])
            return Record(body[0], {}, h)
        return cls.__new__(cls)

    def pairs(self, body, depth):
        if type(body) is not list:
            raise BadValue("pairs expected")
        out = []
        for p in body:
            if type(p) is not list or len(p) != 2:
                raise BadValue("pair expected")
            out.append((self.d(p[0], depth + 1), self.d(p[1], depth + 1)))
        return out

    def items(self, body, depth):
        if type(body) is not list:
            raise BadValue("list expected")
        return [self.d(x, depth + 1) for x in body]

    def value(self, tag, body, depth, into):
        """The value of tag and body; into: the empty object to fill (a
        numbered one), else a new one."""
        if tag == "i":
            return _hexint(body)
        if tag == "f":
            return float.fromhex(body)
        if tag == "S":
            return bytes.fromhex(body).decode("utf-8", "surrogatepass")
        if tag == "t":
            return tuple(self.items(body, depth))
        if tag == "d":
            return _fill(dict() if into is None else into, self.pairs(body, depth))
        if tag == "s":
            return _fill_set(set() if into is None else into, self.items(body, depth))
        if tag == "z":
            return frozenset(self.items(body, depth))
        if tag == "c":
            return complex(float.fromhex(body[0]), float.fromhex(body[1]))
        if tag == "b":
            return binascii.a2b_base64(body, strict_mode=True)
        if tag == "y":
            b = binascii.a2b_base64(body, strict_mode=True)
            if into is None:
                return bytearray(b)
            into[:] = b
            return into
        if tag == "C":
            return _fill(collections.Counter() if into is None else into, self.pairs(body, depth))
        if tag == "o":
            return _fill(collections.OrderedDict() if into is None else into, self.pairs(body, depth))
        if tag == "dd":
            name, pairs = body
            factory = _FACTORIES.get(name) if name is not None else None
            if name is not None and factory is None:
                raise BadValue("unknown default factory")
            d = collections.defaultdict(factory) if into is None else into
            d.default_factory = factory
            return _fill(d, self.pairs(pairs, depth))
        if tag == "q":
            maxlen, items = body
            if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
                raise BadValue("bad maxlen")
            if into is None:
                return collections.deque(self.items(items, depth), maxlen)
            into.__init__(self.items(items, depth), maxlen)
            return into
        if tag == "D":
            if type(body) is not str or len(body) > 1 << 16:
                raise BadValue("bad decimal")
            return sys.modules["decimal"].Decimal(body) if "decimal" in sys.modules else __import__("decimal").Decimal(body)
        if tag == "F":
            return __import__("fractions").Fraction(_hexint(body[0]), _hexint(body[1]))
        if tag == "r":
            if type(body) is not list or len(body) != 3 or any(type(n) is not int for n in body):
                raise BadValue("bad range")
            return range(*body)
        if tag == "T":
            if type(body) is not str or body not in _BUILTIN_TYPES:
                raise BadValue("unknown type")
            return _BUILTIN_TYPES[body]
        if tag == "R":
            obj = self.record_shell(body) if into is None else into
            fields = body[1]
            if type(fields) is not list:
                raise BadValue("bad record")
            vals = {}
            for p in fields:
                if type(p) is not list or len(p) != 2 or type(p[0]) is not str or not p[0].isidentifier():
                    raise BadValue("bad record field")
                vals[p[0]] = self.d(p[1], depth + 1)
            set_fields(obj, vals)
            return obj
        if tag == "n":
            name, fields, items = body
            key = (name, tuple(fields))
            nt = _nt_types.get(key)
            if nt is None:
                if len(_nt_types) > 256:
                    _nt_types.clear()
                nt = _nt_types[key] = collections.namedtuple(name, fields)
            return nt._make(self.items(items, depth))
        if self.remote is not None and tag in ("N", "new", "H"):
            return self.remote(tag, body, self, depth)
        raise BadValue("unknown tag")


def _fill(d, pairs):
    d.clear()
    if type(d) is collections.Counter:
        dict.update(d, pairs)  # Counter.update would count the pairs
    else:
        d.update(pairs)
    return d


def _fill_set(s, items):
    s.clear()
    s.update(items)
    return s


def set_fields(obj, vals):
    """Gives a record or an object of a class its attributes (without its
    __setattr__)."""
    if type(obj) is Record:
        obj._fields = vals
        return
    try:
        d = object.__getattribute__(obj, "__dict__")
        d.clear()
    except AttributeError:
        pass
    for k, v in vals.items():
        object.__setattr__(obj, k, v)


def decode(x):
    """A value the candidate sent, in the judge (no references)."""
    return Decoder().d(x)


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
    uid for good and becomes a fresh interpreter (execve): the judge never
    runs on the worker's image or its arena allocator (the environment has
    no LD_PRELOAD any more), and nothing a job did to a candidate's copy of
    that image can reach it."""
    code = 1
    try:
        os.setsid()
        os.chdir("/")
        drop_to(uid)
        os.set_inheritable(JUDGE_FD, True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LD_")}
        os.execve(sys.executable, [sys.executable, "-I", "-B", sys.argv[0], "--judge"], env)
    except BaseException:
        traceback.print_exc()
    os._exit(code)


def judge_process():
    """The judge's interpreter (harness.py --judge): a bounded address space
    (a value a program returns that expands in the judge, sorted(range(10**9)),
    raises MemoryError there instead of drawing the OOM killer), then serves
    the judge's control socket."""
    code = 0
    try:
        if os.getuid() == 0 or os.geteuid() == 0:
            raise RuntimeError("the judge runs as root")
        judge_imports()
        # Values up to MAX_DEPTH deep are decoded, compared and shown here.
        sys.setrecursionlimit(DEEP_LIMIT)
        budget = vmsize_bytes() + JUDGE_MEMORY
        resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
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
    """A stdio program: runs as __main__ with the test input on stdin, and
    ends as CPython ends (see finish_main). Its exit status is the real one
    of this process; chan only carries hints (a compile error, the
    exception that ended it) for the feedback."""
    code, err = compile_program(prog["code"])
    if err is not None:
        hint({"compile_error": err})
        return 1
    g = {"__name__": "__main__", "__builtins__": builtins, "__file__": SOLUTION_FILE}
    del prog
    status = 0
    try:
        exec(code, g)
    except SystemExit as e:
        status = exit_status(e)
    except BaseException as e:
        f = failure(e)
        try:
            sys.stderr.write(f["tb"])
        except BaseException:
            pass
        hint({"error": f})
        status = 1
    return finish_main(g, status)


def exit_status(e):
    """The status SystemExit e asks for, as CPython computes it."""
    if e.code is None:
        return 0
    if type(e.code) is int:
        return e.code & 0xFF
    try:
        print(e.code, file=sys.stderr)
    except BaseException:
        pass
    return 1


def print_ignored(what, e):
    try:
        sys.stderr.write("Exception ignored in %s:\n%s" % (what, format_exc(e)))
    except BaseException:
        pass


def finish_main(g, status):
    """What Py_FinalizeEx does after __main__ returns: non-daemon threads
    are joined (threading._shutdown; one that never ends is the wall
    limit's), atexit handlers run, the streams are flushed, __main__'s
    globals are cleared and collected (finalizers run), and the streams are
    flushed again; a failed flush of stdout is exit status 120. Returns the
    exit status."""
    th = sys.modules.get("threading")
    if th is not None:
        try:
            th._shutdown()
        except BaseException as e:
            print_ignored("threading._shutdown", e)
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException as e:
        print_ignored("atexit", e)
    failed = flush_failed()
    try:
        for k in list(g):
            if k != "__builtins__":
                g[k] = None
        g.clear()
        gc.collect()
    except BaseException as e:
        print_ignored("module teardown", e)
    return 120 if flush_failed() or failed else status


def flush_failed():
    failed = False
    for s in (sys.stdout, sys.stderr):
        try:
            if not s.closed:
                s.flush()
        except BaseException:
            failed = failed or s is sys.stdout
    return failed


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
            # The task's setup builds the test's objects from the program's
            # own classes (MBPP test_setup_code): they only feed its calls.
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
    # Nothing about the program's names goes to the judge: the tests'
    # names are the task's.
    send_frame(CHAN_FD, {"loaded": True})
    frames = Frames(CHAN_FD, frame_bytes)
    handles = []
    while True:
        with deep():
            msg = frames.next()
        if msg is None or "end" in msg:
            break
        # A batch of calls is answered one frame per call, each as soon as
        # it returns.
        for c in msg["calls"]:
            reply = answer(ns, handles, c)
            with deep():
                send_frame(CHAN_FD, reply)
            if reply.get("err", {}).get("kind") == "memory":
                # Out of memory ends the run, as the memory limit kills a
                # process: whether later tests would fit in what is left of
                # the CPU limit is up to how fast the machine allocates.
                flush_std()
                return 1
    flush_std()
    return 0


def lookup(ns, name):
    """A name of the test, in the candidate's namespace: the program's and
    the setup's names, builtins, then a standard-library module of that
    name."""
    if type(name) is not str or not name.isidentifier():
        raise BadValue("bad name")
    if name in ns:
        return ns[name]
    if name in builtins.__dict__:
        return builtins.__dict__[name]
    if name in sys.stdlib_module_names and not name.startswith("_"):
        return __import__(name)
    raise NameError("name %r is not defined" % name)


def resolve_in(ns, qualname):
    """The program's class of a qualified name (a record the judge sends)."""
    parts = qualname.split(".")
    obj = lookup(ns, parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p)
    if not isinstance(obj, type):
        raise TypeError("%s is not a class" % qualname)
    return obj


def remote_in(ns, handles, tag, body, dec, depth):
    """The judge's stand-ins, evaluated in the candidate's namespace: a name
    ("N"), a call of one ("new": Pair(5, 24) in an assert), or an object
    the candidate answered with before ("H")."""
    if tag == "N":
        return lookup(ns, body)
    if tag == "H":
        if type(body) is not int or not 0 <= body < len(handles):
            raise BadValue("bad handle")
        return handles[body]
    fn, a, k = body
    return dec.d(fn, depth + 1)(*dec.d(a, depth + 1), **dec.d(k, depth + 1))


def eval_args(ns, src):
    """A value test's arguments, evaluated from the task's text in the
    program's namespace (they only feed the program's own computation)."""
    code = compile("(lambda *a, **k: (a, k))(" + src + "\n)", "<test>", "eval")
    for name in code.co_names:
        if name not in ns and name not in builtins.__dict__ and name in sys.stdlib_module_names \
                and not name.startswith("_"):
            ns[name] = __import__(name)
    return eval(code, ns)


def answer(ns, handles, c):
    """One call of the judge: [name, args, kwargs] (literal data), or
    {"f", "a", "k", "w"} (arguments with object numbers; w: report their
    new state; "m": the number of an object answered before whose method
    f is) or {"f", "src"} (arguments as the test's text)."""
    if type(c) is list:
        c = {"f": c[0], "a": c[1], "k": c[2]}
    table, memo, before = [], None, None
    try:
        if "m" in c:
            if type(c["m"]) is not int or not 0 <= c["m"] < len(handles) or type(c["f"]) is not str:
                raise BadValue("bad method call")
            fn = getattr(handles[c["m"]], c["f"])
        else:
            fn = ns.get(c["f"])
        if "src" in c:
            args, kwargs = eval_args(ns, c["src"])
        else:
            dec = Decoder(table, marks=True, resolve=lambda q: resolve_in(ns, q),
                          remote=lambda tag, body, d, depth: remote_in(ns, handles, tag, body, d, depth))
            with deep():
                args, kwargs = dec.d(c["a"]), dec.d(c["k"])
        if c.get("w"):
            memo = {id(o): i for i, o in enumerate(table)}
            with deep():
                before = [Encoder(memo).body(o, type(o), 0) for o in table]
        rv = fn(*args, **kwargs)
    except BaseException as e:
        flush_std()
        f = failure(e)
        if f["kind"] == "exit":
            f["tb"] = "the program called exit(%s) during the test" % safe_repr(e.code, 100)
        return {"err": f}
    try:
        with deep():
            reply = {"v": Encoder(memo, handles=handles).enc(rv)}
            if before is not None:
                states = []
                for i, o in enumerate(table):
                    st = Encoder(memo).body(o, type(o), 0)
                    if st != before[i]:
                        states.append([i, st])
                reply["a"] = states
            return reply
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
    """The judge's end of chan. Sticky: once the candidate is gone (its
    process ended, it broke the protocol) or answered with what is not a
    value, that stays the job's state, whatever a test's code caught."""

    def __init__(self, fd, frame_bytes):
        self.fd, self.frames, self.gone = fd, Frames(fd, frame_bytes), False
        self.notplain = None  # the first "not a value" answer's event fields
        self.resolve = None   # the task's class of a record's name, or None

    def recv(self):
        """The candidate's next frame as a dict."""
        if self.gone:
            raise CandidateGone()
        try:
            m = self.frames.next()
        except FrameTooLarge:
            self.gone = True
            raise self.bad({"bad": "return value larger than the report limit"})
        except Exception:  # malformed, too deep, out of memory: never the judge's failure
            m = None
        if type(m) is not dict:
            self.gone = True
            raise CandidateGone()
        return m

    def bad(self, info):
        if self.notplain is None:
            self.notplain = info
        return CandidateFailed("notplain", info)

    def send(self, msg):
        if self.gone:
            raise CandidateGone()
        try:
            send_frame(self.fd, msg)
        except OSError:
            self.gone = True
            raise CandidateGone()

    def result(self, table=None):
        """The value of the call the candidate answers next (table: the
        judge's objects the call's arguments numbered, which the answer may
        name and whose new state it carries)."""
        m = self.recv()
        if "v" in m:
            try:
                dec = Decoder(table, resolve=self.resolve, conn=self)
                rv = dec.d(m["v"])
                if table is not None:
                    write_back(dec, table, m.get("a"))
                return rv
            except (BadValue, RecursionError) as e:
                raise self.bad({"bad": "malformed value (%s)" % (e if isinstance(e, BadValue) else type_name(e))})
            except MemoryError:
                raise CandidateFailed("error", {"kind": "memory", "type": "MemoryError",
                                                "tb": "the value the program returned exhausted the judge's memory"})
        if "err" in m and type(m["err"]) is dict:
            raise CandidateFailed("error", {k: str(m["err"].get(k, ""))[:4000] for k in ("kind", "type", "tb")})
        if "bad" in m:
            raise self.bad({"bad": str(m["bad"])[:200], "r": str(m.get("r", ""))[:2000]})
        self.gone = True
        raise CandidateGone()

    def call(self, name, args, kwargs, handle=None):
        """A call from the test's code: the arguments keep their identity
        (the answer may be one of them) and what the call changed in them
        is written back into them, as in Python. handle: the candidate's
        number of the object whose method name is."""
        enc = Encoder(memo={}, mark=True, remote=encode_remote)
        try:
            msg = {"f": name, "a": enc.enc(list(args)), "k": enc.enc(dict(kwargs)), "w": 1}
        except NotPlain as e:
            raise TaskError("the test passes a %s, which cannot be sent to the program" % e)
        if handle is not None:
            msg["m"] = handle
        self.send({"calls": [msg]})
        return self.result(enc.objs)


def write_back(dec, table, states):
    """Writes the new state of the call's numbered arguments into the
    judge's own objects, in place. A state of another type than its object
    is a malformed answer."""
    if states is None:
        return
    if type(states) is not list:
        raise BadValue("bad argument states")
    new = []
    for st in states:
        if type(st) is not list or len(st) != 2 or type(st[0]) is not int or not 0 <= st[0] < len(table):
            raise BadValue("bad argument state")
        obj = table[st[0]]
        x = st[1]
        tag = "l" if type(x) is list else (next(iter(x)) if type(x) is dict and len(x) == 1 else None)
        if _STATE_TAGS.get(type(obj), "R") != tag:
            raise BadValue("argument state of another type")
        if tag == "R":
            if type(x["R"]) is not list or len(x["R"]) != 2:
                raise BadValue("bad record")
            new.append((obj, dec.value("R", [x["R"][0], x["R"][1]], 0, Record("", {}))))
        else:
            new.append((obj, dec.d(x)))
    for obj, val in new:
        t = type(obj)
        if t is list or t is bytearray:
            obj[:] = val
        elif t is set:
            _fill_set(obj, val)
        elif t is collections.deque:
            obj.clear()
            obj.extend(val)
        elif t in (dict, collections.OrderedDict, collections.Counter, collections.defaultdict):
            _fill(obj, val.items())
        else:
            set_fields(obj, dict(val._fields))


_STATE_TAGS = {list: "l", dict: "d", set: "s", bytearray: "y", collections.deque: "q",
               collections.OrderedDict: "o", collections.Counter: "C", collections.defaultdict: "dd"}


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


class Misuse(BaseException):
    """A test used one of the program's names for anything but passing it to
    the program. A BaseException, and sticky (MISUSED), so that no except of
    the test's can make the test's outcome depend on it."""


MISUSED = [None]


def _misuse(self, *a, **k):
    what = "the test uses the program's %s as a value; only the program can use it" % safe_repr(self, 200)
    if MISUSED[0] is None:
        MISUSED[0] = what
    raise Misuse(what)


class _Stand:
    """A stand-in in the judge for something only the candidate's process
    has. It can be passed to the program (a name, a call of it); any other
    use (truth, comparison, attributes, iteration, arithmetic) is Misuse,
    so the program never decides what a test's expression means."""

    __slots__ = ()
    __bool__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = _misuse
    __iter__ = __len__ = __contains__ = __getitem__ = __setitem__ = __getattr__ = _misuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __int__ = __float__ = __index__ = _misuse
    __str__ = __format__ = _misuse

    def __setattr__(self, name, value):
        _misuse(self)

    def __call__(self, *args, **kwargs):
        return Deferred(self, args, kwargs)


class RemoteName(_Stand):
    """A name the test uses that the task does not define: the program's
    (its class Pair, a variable its setup built)."""

    __slots__ = ("_n",)

    def __init__(self, name):
        object.__setattr__(self, "_n", name)

    def __repr__(self):
        return "name %s" % object.__getattribute__(self, "_n")


class Deferred(_Stand):
    """A call of a RemoteName (Pair(5, 24)): made by the candidate, when it
    receives it as an argument."""

    __slots__ = ("_f", "_a", "_k")

    def __init__(self, f, a, k):
        object.__setattr__(self, "_f", f)
        object.__setattr__(self, "_a", a)
        object.__setattr__(self, "_k", k)

    def __repr__(self):
        return "call of %r" % object.__getattribute__(self, "_f")


def encode_remote(enc, v, depth):
    g = object.__getattribute__
    if type(v) is RemoteName:
        return {"N": g(v, "_n")}
    return {"new": [enc.enc(g(v, "_f"), depth + 1), enc.enc(list(g(v, "_a")), depth + 1),
                    enc.enc(dict(g(v, "_k")), depth + 1)]}


_NOT_RECORDS.update((Record, RemoteName, Deferred, Proxy, _Stand, RemoteMethod))


class TestGlobals(dict):
    """The tests' namespace. A name it lacks resolves, in this order, to a
    builtin, to the standard-library module of that very name (`math` is
    the judge's own `import math`), else to a RemoteName: never to anything
    the program says a name is."""

    def __missing__(self, name):
        if name in builtins.__dict__ or type(name) is not str:
            raise KeyError(name)
        if name in sys.stdlib_module_names and not name.startswith("_"):
            try:
                v = self[name] = importlib.import_module(name)
                return v
            except BaseException:
                pass
        if name.startswith("__") or not name.isidentifier():
            raise KeyError(name)
        v = self[name] = RemoteName(name)
        return v



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
    limit = sys.getrecursionlimit()
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
            sys.setrecursionlimit(limit)
            os.chdir("/")
            judge_job(report, payload, Conn(chan, int(req["frame_bytes"])))
        except BaseException:
            report.append({"ev": "error", "error": "judge: " + traceback.format_exc()[-2000:]})
        finally:
            os.close(chan)
        send_report(ctrl, req["id"], report)
        if report and report[-1].get("ev") == "error":
            # The judge's own failure: the pool replaces the slot, so
            # nothing of this judge's state meets another job.
            os._exit(1)


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
    """The namespace tests run in (TestGlobals): the task's helpers (its
    prompt's code) and setup, the candidate's proxy, and the random seed.
    Built on first use, so that a job whose tests are all literal
    call-and-compare ones never builds it; a task with setup code builds it
    before any test. Setup that needs the program's classes (MBPP
    test_setup_code building a tree of the solution's Node) cannot run here:
    the names it binds then stand for the candidate's own values (its
    process ran the setup after the program)."""

    def __init__(self, payload):
        self.payload, self.g, self.cand = payload, None, None
        self.task_err = None

    def ns(self):
        if self.g is None:
            p = self.payload
            random.seed(int(p.get("seed", 0)))
            g = self.g = TestGlobals(__builtins__=builtins, __name__="__test__")
            if p.get("imports"):
                # What the task's own code (its reference solution)
                # imports: MBPP tests use the reference's
                # `from math import isclose`.
                exec_imports(p["imports"], g)
            if p.get("helpers"):
                # The task's prompt where it is code (HumanEval's defines
                # helpers that checks call): whatever it defines before
                # any failure stays.
                exec_helpers(p["helpers"], g)
            if p.get("setup"):
                try:
                    code = cached_compile(p["setup"], "<setup>", "exec")
                except BaseException as e:
                    self.task_err = "the task's setup code does not compile: %s" % test_tb(e)
                else:
                    try:
                        exec(code, g)
                    except Misuse:
                        pass
                    except BaseException as e:
                        if MISUSED[0] is None:
                            self.task_err = "the task's setup code failed: %s" % test_tb(e)
                    MISUSED[0] = None
                    # What the setup built from the program's names is the
                    # candidate's (its process ran the same setup).
                    for n in setup_names(p["setup"]):
                        if n not in g or has_stand(dict.get(g, n)):
                            g[n] = RemoteName(n)
        if self.cand is not None and "candidate" not in self.g:
            entry = self.cand._name
            self.g[entry] = self.g["candidate"] = self.cand
            self.g["__murphy_args__"] = lambda *a, **k: (a, k)
        return self.g

    def resolve(self, qualname):
        """The task's own class of a record's name (the task's helpers
        define a ListNode that the program's answer is built from), else
        None: a Record."""
        g = self.ns()
        parts = qualname.split(".")
        obj = dict.get(g, parts[0])
        try:
            for p in parts[1:]:
                obj = obj.__dict__[p] if isinstance(obj, type) else None
        except KeyError:
            return None
        # Only a class the task's own code defined here (its module is the
        # tests' namespace): never a library class whose private state the
        # program would then choose.
        if isinstance(obj, type) and type(obj) is type and _is_record_type(obj) \
                and obj.__dict__.get("__module__") == "__test__":
            return obj
        return None


def has_stand(v, depth=0):
    """Whether a value of the setup holds a stand-in for the program's."""
    if isinstance(v, _Stand):
        return True
    if depth > 20:
        return False
    t = type(v)
    if t in (list, tuple, set, frozenset, collections.deque):
        return any(has_stand(x, depth + 1) for x in v)
    if t is dict:
        return any(has_stand(k, depth + 1) or has_stand(x, depth + 1) for k, x in v.items())
    return False


def setup_names(src):
    """The names the setup binds at its top level."""
    def build():
        names = set()
        for node in ast.parse(src, "<setup>", "exec").body:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
                elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(sub.name)
                elif isinstance(sub, ast.alias):
                    names.add((sub.asname or sub.name).split(".")[0])
        return tuple(sorted(names))
    try:
        return cached((src, "<setup>", "names"), build)
    except SyntaxError:
        return ()


def judge_job(report, payload, conn):
    """Runs one job's tests against the candidate, appending events to report."""
    entry = payload.get("entry_point") or ""
    space = TestSpace(payload)
    conn.resolve = space.resolve
    MISUSED[0] = None
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
    space.cand = Proxy(conn, entry)
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


def exec_imports(src, g):
    """Runs the top-level import statements of the task's code (standard
    library modules only), each on its own: one that fails binds nothing."""
    def build():
        try:
            tree = ast.parse(src, "<task>", "exec")
        except (SyntaxError, ValueError):
            return ()
        out = []
        for node in tree.body:
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            else:
                continue
            if all(m.split(".")[0] in sys.stdlib_module_names and not m.startswith("_") and m != "__future__" for m in mods):
                out.append(compile(ast.Module([node], []), "<task>", "exec"))
        return tuple(out)

    for code in cached((src, "<task>", "imports"), build):
        try:
            exec(code, g)
        except BaseException:
            pass


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
        MISUSED[0] = None
        return


def judged(fn, conn):
    """The test event fields for running fn, which returns them; raises
    CandidateGone when the program went away meanwhile. Nothing the program
    sent can make this the judge's failure, and what a test's code caught
    does not change what happened: a candidate that went away, answered
    with what is not a value, or a test that used the program's names as
    values decide the test."""
    MISUSED[0] = None
    conn.notplain = None
    propagated = False
    try:
        ev = fn()
    except CandidateFailed as e:
        # The candidate's failure reached the judge as it happened: that
        # is the test's result.
        ev, propagated = dict(e.info, status=e.status), True
    except TaskError as e:
        ev = {"status": "task", "tb": str(e)[:4000]}
    except MemoryError:
        # What the program returned does not fit the judge's memory.
        gc.collect()
        ev = {"status": "error", "kind": "memory", "type": "MemoryError",
              "tb": "the value the program returned exhausted the judge's memory"}
    except CandidateGone:
        raise
    except BaseException as e:
        # An assertion, or the test's own code raising on a value the
        # program returned (comparing a list with an int): the program's
        # answer is wrong, not the task.
        ev = {"status": "wrong", "tb": test_tb(e)}
    if conn.gone and not propagated:
        raise CandidateGone()
    if ev is None and MISUSED[0] is None and conn.notplain is None:
        return None
    if conn.notplain is not None and not propagated:
        ev = dict(conn.notplain, status="notplain")
    conn.notplain = None
    if MISUSED[0] is not None:
        ev = {"status": "task", "tb": MISUSED[0]}
        MISUSED[0] = None
    return ev


def run_group(report, tests, i, j, space, conn):
    """Runs tests[i:j], one assert or check test or a batch of value tests;
    returns False when the candidate went away."""
    def task_failed():
        raise TaskError(space.task_err)

    if tests[i].get("kind") != "value":
        try:
            ev = judged(task_failed if space.task_err is not None else lambda: run_test(tests[i], space.ns()), conn)
        except CandidateGone:
            report.append({"ev": "gone", "i": i})
            return False
        report.append(dict(ev, ev="test", i=i))
        return True
    # Every call of the batch goes out in one frame. Arguments whose text
    # is a literal go as data; others as their text, evaluated in the
    # candidate's namespace (Pair(5, 24), int, a setup variable).
    calls, results = [], {}
    entry = space.cand._name

    def add_call(k):
        msg = literal_call(entry, tests[k]["args"])
        if msg is False:
            # Evaluated here, from the task's names; the program's names
            # in them (Pair(5, 24), a variable of its setup) travel as
            # stand-ins its process resolves. What cannot travel as data
            # (a lambda) goes as the text, evaluated in its namespace.
            try:
                args, kwargs = judge_args(tests[k], space.ns())
                enc = Encoder(remote=encode_remote)
                msg = [entry, enc.enc(list(args)), enc.enc(dict(kwargs))]
            except (NotPlain, Misuse):
                MISUSED[0] = None
                msg = {"f": entry, "src": tests[k]["args"]}
        calls.append(msg)

    for k in range(i, j):
        try:
            ev = judged(task_failed if space.task_err is not None else lambda: add_call(k), conn)
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
                results[k] = judged(lambda: compare(conn.result(), tests[k], space), conn)
            except CandidateGone:
                report.append({"ev": "gone", "i": k})
                return False
        report.append(dict(results[k], ev="test", i=k))
    return True


def test_tb(e):
    return "".join(traceback.format_exception_only(e)).strip()[-2000:]


def judge_args(t, g):
    try:
        return eval(cached_compile("__murphy_args__(" + t["args"] + "\n)", "<test>", "eval"), g)
    except (CandidateGone, CandidateFailed, Misuse):
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
    if sys.argv[1:] == ["--judge"]:
        judge_process()
    # --cold skips the preloading (a sandbox started for a single job).
    warm_up("--cold" in sys.argv[1:])
    serve()
