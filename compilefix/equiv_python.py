# Digests of Python modules' code objects without line tables, for the
# artifact-equivalence judge (compilefix/equiv.go). Usage:
#   python3 -c SCRIPT OUT FILE...
# writes "DIGEST FILE" per file to OUT. A code object is reduced
# recursively to what it executes: bytecode, constants (nested code objects
# reduced the same way, each constant tagged with its type), names,
# variables, flags, stack size and the exception table; the file name, the
# first line number and the line and position tables are dropped. A file
# that does not exist digests as "missing", one that does not compile as
# "syntax-error:" and its message.
import hashlib
import os
import sys
import types

FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize",
          "co_flags", "co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars",
          "co_name", "co_qualname", "co_exceptiontable")


def reduce(v):
    if isinstance(v, types.CodeType):
        return ("code",) + tuple((f, getattr(v, f, None)) for f in FIELDS) + (("consts", tuple(reduce(c) for c in v.co_consts)),)
    if isinstance(v, (tuple, frozenset)):
        items = [reduce(x) for x in v]
        if isinstance(v, frozenset):
            items.sort(key=repr)
        return (type(v).__name__, tuple(items))
    return (type(v).__name__, repr(v))


def digest(path):
    try:
        with open(path, "rb") as f:
            src = f.read()
    except FileNotFoundError:
        return "missing"
    try:
        code = compile(src, "<equiv>", "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError) as e:
        return "syntax-error:" + hashlib.sha256(str(e).encode()).hexdigest()[:16]
    return hashlib.sha256(repr(reduce(code)).encode()).hexdigest()


def main():
    out, files = sys.argv[1], sys.argv[2:]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        for p in files:
            f.write("%s %s\n" % (digest(p), p))


main()
