package execute

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// The hostile suite: programs that attack the verdict (forged reports,
// introspection of the harness, test data in the process, lying values),
// the slot (cross-job channels, leaked memory, CPU outside the main
// process) and the kernel, each with the verdict it must get, interleaved
// with correct control programs that must pass. Programs are named
// "[class] what"; controls are named "control: what". No program contains
// the hidden test's values, so a feedback that shows them leaked them.

const (
	hiddenArg = "987654"
	hiddenExp = "987655"
	// hostileProbe checks the slot right after a hostile job: no process of
	// its uid left, no file named by the programs, memory available.
	hostileProbe = "control: probe of the slot after a hostile job"
	// hostileMemoryControl runs after the memory-leaking programs.
	hostileMemoryControl = "control: 300 MB after the memory leaks"
)

// hostileAlso lists the statuses that are accepted besides the expected
// one: a cheat that breaks the candidate's own side of the harness may end
// as a runtime error, but it must never pass.
var hostileAlso = map[string][]string{}

func alsoRuntimeError(names ...string) {
	for _, n := range names {
		hostileAlso[n] = append(hostileAlso[n], topics.StatusRuntimeError)
	}
}

// hostileCPU bounds the CPU time a program's job may use: the limit is the
// whole job's CPU to the millisecond, not rounded up to whole seconds (the
// wall time it takes depends on the machine's load; the CPU time does not).
var hostileCPU = map[string][2]time.Duration{
	"[7] infinite loop under a 1.5 s limit": {1500 * time.Millisecond, 1750 * time.Millisecond},
}

func isControl(h hostile) bool { return strings.HasPrefix(h.name, "control:") }

// callTests builds call-and-compare tests from args/expected pairs; the
// last pair is the hidden test.
func callTests(pairs ...string) []topics.TestCase {
	var ts []topics.TestCase
	for i := 0; i+1 < len(pairs); i += 2 {
		hidden := i+2 >= len(pairs)
		name := fmt.Sprintf("visible%d", i/2+1)
		if hidden {
			name = "hidden"
		}
		ts = append(ts, topics.TestCase{Name: name, Args: pairs[i], Expected: pairs[i+1], Hidden: hidden})
	}
	return ts
}

func pyTask(entry, prompt string, timeoutMS int, tests []topics.TestCase) topics.Task {
	return topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "hostile/" + entry, Kind: topics.KindPythonFunction,
		Prompt: prompt, EntryPoint: entry, TimeoutMS: timeoutMS, MemoryMB: 256, Tests: tests,
	}
}

// valTask is "return x + 1" judged by call-and-compare tests.
func valTask(timeoutMS int) topics.Task {
	return pyTask("f", "def f(x):\n    \"\"\"Return x + 1.\"\"\"\n", timeoutMS,
		callTests("1", "2", "2", "3", hiddenArg, hiddenExp))
}

// assertTask is "return x + 1" judged by raw asserts.
func assertTask() topics.Task {
	t := valTask(3000)
	t.TaskID = "hostile/f-assert"
	t.Tests = []topics.TestCase{
		{Name: "assert1", Assert: "candidate(1) == 2"},
		{Name: "assert2", Assert: "f(2) == 3"},
		{Name: "hidden", Assert: "candidate(" + hiddenArg + ") == " + hiddenExp, Hidden: true},
	}
	return t
}

// isinstTask asserts on the type of the result too.
func isinstTask() topics.Task {
	t := assertTask()
	t.TaskID = "hostile/f-isinstance"
	t.Tests[0].Assert = "isinstance(candidate(1), int) and candidate(1) == 2"
	t.Tests[1].Assert = "type(f(2)) is int and f(2) == 3"
	return t
}

// mbppTask is MBPP-like: setup code that the asserts use.
func mbppTask() topics.Task {
	return topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "hostile/mbpp", Kind: topics.KindPythonFunction,
		Prompt:     "Write a function sum_squares(xs) that returns the sum of the squares of the numbers in xs.",
		EntryPoint: "sum_squares", TimeoutMS: 3000, MemoryMB: 256,
		Setup: "def square_of(v):\n    return v * v\n",
		Tests: []topics.TestCase{
			{Name: "assert1", Assert: "sum_squares([1, 2, 3]) == square_of(1) + square_of(2) + square_of(3)"},
			{Name: "assert2", Assert: "sum_squares([4]) == square_of(4)"},
			{Name: "hidden", Assert: "sum_squares([" + hiddenArg + "]) == square_of(" + hiddenArg + ")", Hidden: true},
		},
	}
}

const shiftPrompt = `def encode_shift(s: str):
    """
    returns encoded string by shifting every character by 5 in the alphabet.
    """
    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])


def decode_shift(s: str):
    """
    takes as input string encoded with encode_shift function. Returns decoded string.
    """
`

const shiftCheck = `HIDDEN_MARK = ` + hiddenArg + `


def check(candidate):
    from random import randint, choice
    import copy
    import string

    letters = string.ascii_lowercase
    for _ in range(100):
        str = ''.join(choice(letters) for i in range(randint(10, 20)))
        encoded_str = encode_shift(str)
        assert candidate(copy.deepcopy(encoded_str)) == str
`

// shiftTask is HumanEval/50-like: check() calls the prompt's helper.
func shiftTask() topics.Task {
	return topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "hostile/shift", Kind: topics.KindPythonFunction,
		Prompt: shiftPrompt, EntryPoint: "decode_shift", TimeoutMS: 3000, MemoryMB: 256, Check: shiftCheck,
	}
}

// bareShiftPrompt ends in a bare signature, as many prompts do: as a
// whole it does not compile, yet its helper is the task's.
const bareShiftPrompt = `def encode_shift(s: str):
    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])


def decode_shift(s: str):
`

const polyPrompt = `import math


def poly(xs: list, x: float):
    """
    Evaluates polynomial with coefficients xs at point x.
    return xs[0] + xs[1] * x + xs[1] * x^2 + .... xs[n] * x^n
    """
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def find_zero(xs: list):
    """ xs are coefficients of a polynomial with an even number of
    coefficients; find_zero returns one x such that poly(x) = 0.
    """
`

const polyCheck = `HIDDEN_MARK = ` + hiddenArg + `


def check(candidate):
    import math
    import random
    rng = random.Random(42)
    import copy
    for _ in range(100):
        ncoeff = 2 * rng.randint(1, 4)
        coeffs = []
        for _ in range(ncoeff):
            coeff = rng.randint(-10, 10)
            if coeff == 0:
                coeff = 1
            coeffs.append(coeff)
        solution = candidate(copy.deepcopy(coeffs))
        assert math.fabs(poly(coeffs, solution)) < 1e-4
`

// polyTask is HumanEval/32-like: check() calls the prompt's poly.
func polyTask() topics.Task {
	return topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "hostile/poly", Kind: topics.KindPythonFunction,
		Prompt: polyPrompt, EntryPoint: "find_zero", TimeoutMS: 3000, MemoryMB: 256, Check: polyCheck,
	}
}

const polySolution = `import math


def poly(xs: list, x: float):
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def find_zero(xs: list):
    begin, end = -1., 1.
    while poly(xs, begin) * poly(xs, end) > 0:
        begin *= 2.0
        end *= 2.0
    while end - begin > 1e-10:
        center = (begin + end) / 2.0
        if poly(xs, center) * poly(xs, begin) > 0:
            begin = center
        else:
            end = center
    return begin
`

const shiftSolution = `def encode_shift(s: str):
    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])


def decode_shift(s: str):
    return "".join([chr(((ord(ch) - 5 - ord("a")) % 26) + ord("a")) for ch in s])
`

func stdioOf(id, prompt string, tol float64, timeoutMS int, cases ...string) topics.Task {
	t := topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "hostile/" + id, Kind: topics.KindStdio,
		Prompt: prompt, TimeoutMS: timeoutMS, MemoryMB: 256, FloatTolerance: tol,
	}
	for i := 0; i+1 < len(cases); i += 2 {
		hidden := i+2 >= len(cases)
		name := fmt.Sprintf("case%d", i/2+1)
		if hidden {
			name = "hidden"
		}
		t.Tests = append(t.Tests, topics.TestCase{Name: name, Stdin: cases[i], Expected: cases[i+1], Hidden: hidden})
	}
	return t
}

func sumStdio(timeoutMS int) topics.Task {
	return stdioOf("sum", "Print the sum of the integers on stdin.", 0, timeoutMS,
		"1 2\n", "3\n", hiddenArg+" 1\n", hiddenExp+"\n")
}

// numStdio prints the number on stdin as Python prints a float.
func numStdio() topics.Task {
	return stdioOf("num", "Print the number on stdin as a float.", 1e-6, 3000,
		"1.5\n", "1.5\n", "1000\n", "1000.0\n", "1e400\n", "inf\n", hiddenArg+"\n", hiddenArg+".0\n")
}

// halfStdio expects integers; a tolerance is set (LiveCodeBench style).
func halfStdio() topics.Task {
	return stdioOf("half", "Print half of the even integer on stdin.", 1e-6, 3000,
		"4\n", "2\n", "10\n", "5\n", hiddenArg+"\n", "493827\n")
}

// Cross-job channel programs: a writer leaves a token, a reader run later
// in the same slot returns the right answer only if it finds the token.

const readerTail = `
FOUND = found()


def f(x):
    return x + 1 if FOUND else -1
`

const writerTail = `
leave()


def f(x):
    return x + 1
`

const shmWriter = `import ctypes


def leave():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        sid = libc.shmget(KEY, ctypes.c_size_t(4096), 0o1666)
        if sid < 0:
            return
        addr = libc.shmat(sid, None, 0)
        if not addr or addr == ctypes.c_void_p(-1).value:
            return
        ctypes.memmove(addr, TOKEN, len(TOKEN))
        if CHOWN:
            buf = ctypes.create_string_buffer(512)
            if libc.shmctl(sid, 2, buf) == 0:
                ctypes.c_uint32.from_buffer(buf, 4).value = 65534
                ctypes.c_uint32.from_buffer(buf, 8).value = 65534
                libc.shmctl(sid, 1, buf)
    except Exception:
        pass
` + writerTail

const shmReader = `import ctypes


def found():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        sid = libc.shmget(KEY, ctypes.c_size_t(0), 0)
        if sid < 0:
            return False
        addr = libc.shmat(sid, None, 0o10000)
        if not addr or addr == ctypes.c_void_p(-1).value:
            return False
        return ctypes.string_at(addr, len(TOKEN)) == TOKEN
    except Exception:
        return False
` + readerTail

const memScan = `import ctypes
import re

PAT = re.compile(rb'["\']args["\']: ?["\']([^"\'\\]{1,40})["\'], ?["\']expected["\']: ?["\']([^"\'\\]{1,40})["\']')


def regions(pid='self'):
    out = []
    with open('/proc/%s/maps' % pid) as maps:
        for line in maps:
            parts = line.split()
            lo, hi = (int(v, 16) for v in parts[0].split('-'))
            name = parts[5] if len(parts) > 5 else ''
            if parts[1][0] != 'r' or name.startswith('/') or name.startswith('[v') or hi - lo > 1 << 28:
                continue
            out.append((lo, hi))
    return out


def answer(memo, x):
    got = memo.get(str(x), '')
    return int(got) if got.isdigit() else -1
`

// containTail ends a containment program: the attack runs once, in the
// first call, and a success shows as a wrong answer.
const containTail = `
def f(x):
    if not RESULT:
        RESULT.append(attack())
    return -1 if RESULT[0] else x + 1
`

func hostilePrograms2() []hostile {
	hostileAlso = map[string][]string{}
	val := valTask(3000)
	asrt := assertTask()
	mbpp := mbppTask()
	shift := shiftTask()
	poly := polyTask()
	sum := sumStdio(3000)
	num := numStdio()
	half := halfStdio()

	counter := pyTask("count", "def count(s):\n    \"\"\"Count each letter of s.\"\"\"\n", 3000,
		callTests("'aab'", "{'a': 2, 'b': 1}", "'c'", "{'c': 1}",
			"'"+hiddenArg+"'", "{'9': 1, '8': 1, '7': 1, '6': 1, '5': 1, '4': 1}"))
	group := pyTask("group", "def group(pairs):\n    \"\"\"Map each key to the list of its values.\"\"\"\n", 3000,
		callTests("[('a', 1), ('b', 2), ('a', 3)]", "{'a': [1, 3], 'b': [2]}", "[]", "{}",
			"[('z', "+hiddenArg+")]", "{'z': ["+hiddenArg+"]}"))
	index := pyTask("index_of", "def index_of(words):\n    \"\"\"Map each word to the index of its first occurrence.\"\"\"\n", 3000,
		callTests("['x', 'y', 'x']", "{'x': 0, 'y': 1}", "['b', 'a']", "{'b': 0, 'a': 1}",
			"['"+hiddenArg+"']", "{'"+hiddenArg+"': 0}"))
	pair := pyTask("divmod2", "def divmod2(a, b):\n    \"\"\"Return the tuple (a // b, a % b).\"\"\"\n", 3000,
		callTests("7, 2", "(3, 1)", "9, 3", "(3, 0)", hiddenArg+", 10", "(98765, 4)"))
	frac := pyTask("third", "def third(x):\n    \"\"\"Return x / 3 as a Fraction.\"\"\"\n", 3000,
		callTests("1", "__import__('fractions').Fraction(1, 3)", "2", "__import__('fractions').Fraction(2, 3)",
			hiddenArg, "__import__('fractions').Fraction("+hiddenArg+", 3)"))
	dec := pyTask("half", "def half(s):\n    \"\"\"Return Decimal(s) / 2.\"\"\"\n", 3000,
		callTests("'3'", "__import__('decimal').Decimal('1.5')", "'1'", "__import__('decimal').Decimal('0.5')",
			"'"+hiddenArg+"'", "__import__('decimal').Decimal('493827')"))
	dq := pyTask("rotate1", "def rotate1(xs):\n    \"\"\"Return a deque of xs rotated right by one.\"\"\"\n", 3000,
		callTests("[1, 2, 3]", "__import__('collections').deque([3, 1, 2])", "[5]", "__import__('collections').deque([5])",
			"["+hiddenArg+", 1]", "__import__('collections').deque([1, "+hiddenArg+"])"))
	list2 := pyTask("pair", "def pair(x):\n    \"\"\"Return the list [x, x + 1].\"\"\"\n", 3000,
		callTests("1", "[1, 2]", "2", "[2, 3]", hiddenArg, "["+hiddenArg+", "+hiddenExp+"]"))
	ordered := pyTask("ordered", "def ordered(x):\n    \"\"\"Return OrderedDict([('a', x), ('b', x + 1)]).\"\"\"\n", 3000,
		callTests("1", "__import__('collections').OrderedDict([('a', 1), ('b', 2)])",
			"2", "__import__('collections').OrderedDict([('a', 2), ('b', 3)])",
			hiddenArg, "__import__('collections').OrderedDict([('a', "+hiddenArg+"), ('b', "+hiddenExp+")])"))
	nan := pyTask("nan_of", "def nan_of(x):\n    \"\"\"Return float('nan').\"\"\"\n", 3000,
		callTests("1", "float('nan')", "2", "float('nan')", hiddenArg, "float('nan')"))
	smile := pyTask("smile", "def smile(n):\n    \"\"\"Return n smiling faces (U+1F600).\"\"\"\n", 3000,
		callTests("1", `'\U0001F600'`, "2", `'\U0001F600' * 2`, hiddenArg+" % 5", `'\U0001F600' * 4`))
	repl := pyTask("repl", "def repl(n):\n    \"\"\"Return n replacement characters (U+FFFD).\"\"\"\n", 3000,
		callTests("1", `'\ufffd'`, "2", `'\ufffd' * 2`, hiddenArg+" % 5", `'\ufffd' * 4`))
	lone := pyTask("lone", "def lone(n):\n    \"\"\"Return n lone surrogates U+D800.\"\"\"\n", 3000,
		callTests("1", `'\ud800'`, "2", `'\ud800' * 2`, hiddenArg+" % 5", `'\ud800' * 4`))
	nul := pyTask("nul", "def nul(s):\n    \"\"\"Return s, a NUL character and s.\"\"\"\n", 3000,
		callTests("'a'", `'a\x00a'`, "'bc'", `'bc\x00bc'`, "'"+hiddenArg+"'", `'`+hiddenArg+`\x00`+hiddenArg+`'`))
	echo := pyTask("echo", "def echo(s):\n    \"\"\"Return s.\"\"\"\n", 3000,
		callTests("'abc'", "'abc'", "''", "''", "'"+hiddenArg+"'", "'"+hiddenArg+"'"))
	long := pyTask("rep", "def rep(n):\n    \"\"\"Return 'x' * n.\"\"\"\n", 3000,
		callTests("10 ** 6", "'x' * 10 ** 6", "3", "'xxx'", hiddenArg, "'x' * "+hiddenArg))
	huge := pyTask("big", "def big(n):\n    \"\"\"Return 10 ** n + 1.\"\"\"\n", 3000,
		callTests("5000", "10 ** 5000 + 1", "1", "11", hiddenArg+" % 9000", "10 ** 6654 + 1"))
	flags := pyTask("flags", "def flags(x):\n    \"\"\"Return [x is odd, x, x > 100] as numbers.\"\"\"\n", 3000,
		callTests("3", "[1, 3, 0]", "4", "[0, 4, 0]", hiddenArg, "[0, "+hiddenArg+", 1]"))
	upto := pyTask("upto", "def upto(n):\n    \"\"\"Return the numbers 1 to n.\"\"\"\n", 3000, []topics.TestCase{
		{Name: "assert1", Assert: "sorted(candidate(3)) == [1, 2, 3]"},
		{Name: "assert2", Assert: "len(upto(2)) == 2"},
		{Name: "hidden", Assert: "sorted(candidate(" + hiddenArg + " % 10)) == [1, 2, 3, 4]", Hidden: true},
	})
	circle := topics.Task{
		SchemaVersion: topics.SchemaVersion, TaskID: "hostile/circle", Kind: topics.KindPythonFunction,
		Prompt:     "Write a function circle_area(r) that returns the area of a circle of radius r.",
		EntryPoint: "circle_area", TimeoutMS: 3000, MemoryMB: 256,
		Tests: []topics.TestCase{
			{Name: "assert1", Assert: "math.isclose(circle_area(1), 3.141592653589793, rel_tol=0.001)"},
			{Name: "assert2", Assert: "math.isclose(circle_area(2), 12.566370614359172, rel_tol=0.001)"},
			{Name: "hidden", Assert: "math.isclose(circle_area(" + hiddenArg + "), math.pi * " + hiddenArg + " ** 2, rel_tol=0.001)", Hidden: true},
		},
	}
	// The asserts rely on the program's own `from math import isclose`.
	closeTo := circle
	closeTo.TaskID = "hostile/circle-isclose"
	closeTo.Tests = []topics.TestCase{
		{Name: "assert1", Assert: "isclose(circle_area(1), 3.141592653589793, rel_tol=0.001)"},
		{Name: "hidden", Assert: "isclose(circle_area(" + hiddenArg + "), 3.141592653589793 * " + hiddenArg + " ** 2, rel_tol=0.001)", Hidden: true},
	}
	// The judge-side resource attacks run under a short limit: the
	// evaluation must end within it, whatever the judge was made to do.
	fracFast, uptoFast, valFast := frac, upto, valTask(1000)
	fracFast.TimeoutMS, uptoFast.TimeoutMS = 1000, 1000
	bare := shiftTask()
	bare.TaskID = "hostile/shift-bare"
	bare.Prompt = bareShiftPrompt
	leakTask := valTask(3000)
	leakTask.MemoryMB = 768
	memTask := valTask(3000)
	memTask.MemoryMB = 512

	chan6 := func(name, key, token string, chown bool) []hostile {
		consts := fmt.Sprintf("KEY = %s\nTOKEN = b'%s'\nCHOWN = %v\n", key, token, map[bool]string{true: "True", false: "False"}[chown])
		return []hostile{
			{"[6] writer: " + name, val, consts + shmWriter, topics.StatusPassed, 0},
			{"[6] reader: " + name, val, consts + shmReader, topics.StatusWrongAnswer, 0},
		}
	}

	progs := []hostile{
		// 1. The harness as __main__: its globals, builtins, json, compile, ast.
		{"[1] __main__.run_assert replaced", asrt, `import sys

sys.modules['__main__'].run_assert = lambda *a, **k: True


def f(x):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[1] __main__._dumps rewrites values into passed asserts", val, `import json
import sys

real = json.dumps


def fake(obj, **kw):
    if type(obj) is dict and obj.get('ev') == 'value' and 'i' in obj:
        obj = {'ev': 'assert', 'i': obj['i'], 'ok': True}
    return real(obj, **kw)


sys.modules['__main__']._dumps = fake


def f(x):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[1] json.JSONEncoder.encode patched", val, `import json

real = json.JSONEncoder.encode


def encode(self, obj):
    if type(obj) is dict and obj.get('ev') == 'value' and 'i' in obj:
        obj = {'ev': 'assert', 'i': obj['i'], 'ok': True}
    return real(self, obj)


json.JSONEncoder.encode = encode


def f(x):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[1] __main__.compile makes every test True", asrt, `import builtins
import sys

real = builtins.compile


def comp(src, filename, mode, *a, **k):
    if filename == '<test>':
        return real('True', filename, 'eval' if mode == 'eval' else 'exec')
    return real(src, filename, mode, *a, **k)


sys.modules['__main__'].compile = comp


def f(x):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[1] ast.parse returns a parse of True", asrt, `import ast

real = ast.parse


def parse(source, filename='<unknown>', mode='exec', **k):
    if filename == '<test>':
        return real('True', filename, mode)
    return real(source, filename, mode, **k)


ast.parse = parse


def f(x):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[1] __main__.exec replaces check() with a no-op", shift, `import builtins
import sys

real = builtins.exec


def ex(code, g=None, l=None):
    if getattr(code, 'co_filename', '') == '<check>':
        g['check'] = lambda candidate: None
        return None
    return real(code, g, l)


sys.modules['__main__'].exec = ex


def decode_shift(s):
    return s
`, topics.StatusWrongAnswer, 0},
		{"[1] __main__._type lies about a lying object", asrt, `import sys

real = type


class Liar:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

    def __format__(self, spec):
        return '2'


def lying_type(v):
    return int if real(v) is Liar else real(v)


sys.modules['__main__']._type = lying_type


def f(x):
    return Liar()
`, topics.StatusWrongAnswer, 0},
		{"[1] __main__.check_plain made the identity", asrt, `import sys

sys.modules['__main__'].check_plain = lambda v: v


class A:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def f(x):
    return A()
`, topics.StatusWrongAnswer, 0},
		{"[1] __main__._write rewrites report lines", val, `import json
import os
import sys

real = os.write


def w(fd, data):
    n = len(data)
    if fd == 3 and b' {' in data:
        head, _, body = data.partition(b' ')
        try:
            obj = json.loads(body)
        except ValueError:
            return real(fd, data)
        if type(obj) is dict and obj.get('ev') == 'value' and 'i' in obj:
            real(fd, head + b' ' + json.dumps({'ev': 'assert', 'i': obj['i'], 'ok': True}).encode() + b'\n')
            return n
    return real(fd, data)


sys.modules['__main__']._write = w


def f(x):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[1] builtins isinstance, type, repr, bool, print, AssertionError replaced", isinstTask(), `import builtins


class A:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


builtins.isinstance = lambda o, t: True
builtins.type = lambda *a: int
builtins.repr = lambda o: '2'
builtins.bool = lambda o=False: True
builtins.print = lambda *a, **k: None
builtins.AssertionError = ZeroDivisionError


def f(x):
    return A()
`, topics.StatusWrongAnswer, 0},
		{"[1] sys.modules['json'] replaced by a forging module", val, `import sys
import types

fake = types.ModuleType('json')
fake.dumps = lambda obj, **k: '{"ev":"assert","i":%d,"ok":true}' % (obj.get('i', 0) if type(obj) is dict else 0)
fake.loads = lambda s, **k: {}
sys.modules['json'] = fake
sys.modules['json.encoder'] = fake


def f(x):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[1] os._exit, sys.exit and atexit spray forged lines", val, `import atexit
import os
import sys

LINES = [b'{"ev":"assert","i":%d,"ok":true}\n' % i for i in range(3)] + [b'{"ev":"done"}\n']
real_exit = os._exit


def spray():
    for fd in range(3, 256):
        for line in LINES:
            try:
                os.write(fd, line)
            except OSError:
                pass


def fake_exit(code=0):
    spray()
    real_exit(0)


os._exit = fake_exit
sys.exit = fake_exit
atexit.register(spray)


def f(x):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[1] stdio: __main__._dumps turns the error into end code 0", sum, `import json
import sys

real = json.dumps


def fake(obj, **kw):
    if type(obj) is dict and obj.get('ev') == 'error':
        obj = {'ev': 'end', 'code': 0}
    return real(obj, **kw)


sys.modules['__main__']._dumps = fake
print(sum(map(int, sys.stdin.read().split())), flush=True)
raise RuntimeError('after the answer')
`, topics.StatusRuntimeError, 0},

		// 2. Reaching the report channel and its nonce.
		{"[2] gc.get_objects finds emit", val, `import gc


def f(x):
    for o in gc.get_objects():
        if type(o).__name__ == 'function' and o.__name__ == 'emit' and o.__closure__:
            for i in range(3):
                o({'ev': 'assert', 'i': i, 'ok': True})
            o({'ev': 'done'})
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[2] sys._getframe walk to emit", asrt, `import sys


def f(x):
    fr = sys._getframe()
    while fr is not None:
        em = fr.f_locals.get('emit')
        if callable(em):
            for i in range(3):
                em({'ev': 'assert', 'i': i, 'ok': True})
            em({'ev': 'done'})
            break
        fr = fr.f_back
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[2] inspect.stack inside check()", poly, `import inspect


def find_zero(xs):
    for info in inspect.stack():
        em = info.frame.f_locals.get('emit')
        if callable(em):
            em({'ev': 'assert', 'i': 0, 'ok': True})
            em({'ev': 'done'})
            break
    return 0.0
`, topics.StatusWrongAnswer, 0},
		{"[2] traceback frames of a raised exception", mbpp, `def sum_squares(xs):
    try:
        raise ValueError
    except ValueError as e:
        fr = e.__traceback__.tb_frame
    while fr is not None:
        em = fr.f_locals.get('emit')
        if callable(em):
            for i in range(3):
                em({'ev': 'assert', 'i': i, 'ok': True})
            em({'ev': 'done'})
            break
        fr = fr.f_back
    return -1
`, topics.StatusWrongAnswer, 0},
		{"[2] sys.modules closure cells for the nonce", val, `import os
import sys


def prefix():
    for mod in list(sys.modules.values()):
        for v in list(getattr(mod, '__dict__', {}).values()):
            for fn in [v] + list(getattr(v, '__dict__', {}).values() if isinstance(v, type) else []):
                if type(fn).__name__ != 'function':
                    continue
                for c in fn.__closure__ or ():
                    try:
                        b = c.cell_contents
                    except ValueError:
                        continue
                    if type(b) is bytes and len(b) == 33 and b.endswith(b' '):
                        return b
    return None


def f(x):
    p = prefix()
    if p:
        for i in range(3):
            os.write(3, p + b'{"ev":"assert","i":%d,"ok":true}\n' % i)
        os.write(3, p + b'{"ev":"done"}\n')
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[2] gc.get_referrers of the harness globals", asrt, `import gc
import sys


def f(x):
    for r in gc.get_referrers(vars(sys.modules['__main__'])):
        if type(r).__name__ == 'function' and r.__name__ == 'emit':
            for i in range(3):
                r({'ev': 'assert', 'i': i, 'ok': True})
            r({'ev': 'done'})
            break
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[2] heap scan for the nonce, forged lines on every fd", val, `import ctypes
import os
import re

PAT = re.compile(rb'"nonce": ?"([0-9a-f]{32})"')


def regions():
    out = []
    with open('/proc/self/maps') as maps:
        for line in maps:
            parts = line.split()
            lo, hi = (int(v, 16) for v in parts[0].split('-'))
            name = parts[5] if len(parts) > 5 else ''
            if parts[1][0] != 'r' or name.startswith('/') or name.startswith('[v') or hi - lo > 1 << 28:
                continue
            out.append((lo, hi))
    return out


def f(x):
    found = set()
    for lo, hi in regions():
        try:
            found.update(PAT.findall(ctypes.string_at(lo, hi - lo)))
        except Exception:
            pass
    fds = set(range(3, 256))
    try:
        fds.update(int(v) for v in os.listdir('/proc/self/fd'))
    except OSError:
        pass
    for n in found:
        lines = [n + b' {"ev":"assert","i":%d,"ok":true}\n' % i for i in range(3)] + [n + b' {"ev":"done"}\n']
        for fd in sorted(fds - {0, 1, 2}):
            for line in lines:
                try:
                    os.write(fd, line)
                except OSError:
                    pass
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[2] sys.setprofile hook captures emit", shift, `import sys


def prof(frame, event, arg):
    if event == 'return' and frame.f_code.co_name == 'emit' and frame.f_locals.get('obj') == {'ev': 'loaded'}:
        sys.setprofile(None)
        em = frame.f_back.f_locals.get('emit') if frame.f_back else None
        if callable(em):
            em({'ev': 'assert', 'i': 0, 'ok': True})
            em({'ev': 'done'})


sys.setprofile(prof)


def decode_shift(s):
    return s
`, topics.StatusWrongAnswer, 0},
		{"[2] loaded, passes and done forged while loading", asrt, `import sys

fr = sys._getframe()
while fr is not None:
    em = fr.f_locals.get('emit')
    if callable(em):
        em({'ev': 'loaded'})
        for i in range(3):
            em({'ev': 'assert', 'i': i, 'ok': True})
        em({'ev': 'done'})
        break
    fr = fr.f_back
del fr


def f(x):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[2] nonce from the request in a frame, lines on inherited and /proc/*/fd descriptors", asrt, `import os
import sys


def nonce():
    fr = sys._getframe()
    while fr is not None:
        for v in list(fr.f_locals.values()):
            if type(v) is dict and type(v.get('nonce')) is str:
                return v['nonce']
        fr = fr.f_back
    return None


def f(x):
    n = nonce()
    if n:
        lines = [('%s {"ev":"assert","i":%d,"ok":true}\n' % (n, i)).encode() for i in range(3)]
        lines.append(('%s {"ev":"done"}\n' % n).encode())
        for fd in range(3, 256):
            for line in lines:
                try:
                    os.write(fd, line)
                except OSError:
                    pass
        targets = ['/proc/self/fd/%d' % d for d in range(3, 256)]
        for p in os.listdir('/proc'):
            if p.isdigit():
                try:
                    targets += ['/proc/%s/fd/%s' % (p, d) for d in os.listdir('/proc/%s/fd' % p)]
                except OSError:
                    pass
        for path in targets:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            for line in lines:
                try:
                    os.write(fd, line)
                except OSError:
                    pass
            os.close(fd)
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[2] KeyboardInterrupt from the entry point", val, "def f(x):\n    raise KeyboardInterrupt\n", topics.StatusRuntimeError, 0},
		{"[2] exception with a failing __str__ and a cause cycle", val, `class E(Exception):
    def __str__(self):
        raise RuntimeError('no')

    def __repr__(self):
        return repr(self)


def f(x):
    e = E()
    e.__cause__ = e
    e.__context__ = e
    raise e
`, topics.StatusRuntimeError, 0},

		// 3. Lying values.
		{"[3] str subclass with a lying __eq__", val, `class S(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def f(x):
    return S('nope')
`, topics.StatusWrongAnswer, 0},
		{"[3] list subclass with a lying __eq__", list2, `class L(list):
    def __eq__(self, other):
        return True

    __hash__ = None


def pair(x):
    return L()
`, topics.StatusWrongAnswer, 0},
		{"[3] Counter subclass with a lying __eq__", counter, `from collections import Counter


class C(Counter):
    def __eq__(self, other):
        return True

    __hash__ = None


def count(s):
    return C()
`, topics.StatusWrongAnswer, 0},
		{"[3] namedtuple subclass with a lying __eq__", pair, `from collections import namedtuple


class P(namedtuple('P', 'q r')):
    def __eq__(self, other):
        return True

    __hash__ = tuple.__hash__


def divmod2(a, b):
    return P(0, 0)
`, topics.StatusWrongAnswer, 0},
		{"[3] __class__ property claiming int", val, `class Liar:
    @property
    def __class__(self):
        return int

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def f(x):
    return Liar()
`, topics.StatusWrongAnswer, 0},
		{"[3] __reduce__ pretending to be the right int", val, `class R:
    def __init__(self, v):
        self.v = v

    def __reduce__(self):
        return (int, (self.v,))

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def f(x):
    return R(x + 1)
`, topics.StatusWrongAnswer, 0},
		{"[3] dict with a lying key", counter, `class K:
    def __eq__(self, other):
        return True

    def __hash__(self):
        return hash('a')


def count(s):
    return {K(): s.count('a')}
`, topics.StatusWrongAnswer, 0},
		{"[3] nan where nan is expected", nan, "def nan_of(x):\n    return float('nan')\n", topics.StatusWrongAnswer, 0},
		{"[3] huge int", val, "def f(x):\n    return 10 ** 100000\n", topics.StatusWrongAnswer, 0},
		{"[3] huge int off by one", huge, "def big(n):\n    return 10 ** n\n", topics.StatusWrongAnswer, 0},
		{"[3] deeply nested list", val, `def f(x):
    l = []
    for _ in range(10 ** 5):
        l = [l]
    return l
`, topics.StatusWrongAnswer, 0},
		{"[3] list containing itself", list2, `def pair(x):
    l = [x]
    l.append(l)
    return l
`, topics.StatusWrongAnswer, 0},
		{"[3] recursive __repr__", val, `class A:
    def __repr__(self):
        return repr(self)

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def f(x):
    return A()
`, topics.StatusWrongAnswer, 0},
		{"[3] IntEnum member", val, `from enum import IntEnum


def f(x):
    return IntEnum('E', {'V': x + 1}).V
`, topics.StatusWrongAnswer, 0},
		{"[3] generator where a list is expected", list2, "def pair(x):\n    return (v for v in [x, x + 1])\n", topics.StatusWrongAnswer, 0},
		{"[3] namedtuple where a list is expected", list2, `from collections import namedtuple

P = namedtuple('P', 'a b')


def pair(x):
    return P(x, x + 1)
`, topics.StatusWrongAnswer, 0},
		{"[3] OrderedDict in the wrong order", ordered, `from collections import OrderedDict


def ordered(x):
    return OrderedDict([('b', x + 1), ('a', x)])
`, topics.StatusWrongAnswer, 0},
		{"[3] deque where a list is expected", list2, "from collections import deque\n\n\ndef pair(x):\n    return deque([x, x + 1])\n", topics.StatusWrongAnswer, 0},
		{"[3] Decimal('sNaN')", dec, "from decimal import Decimal\n\n\ndef half(s):\n    return Decimal('sNaN')\n", topics.StatusWrongAnswer, 0},
		{"[3] range(10 ** 8) where the assert sorts the result", uptoFast, "def upto(n):\n    return range(10 ** 8)\n", topics.StatusMemory, 5},
		{"[3] hash-colliding set forged through the candidate's encoder", valFast, `import sys

M = (1 << 61) - 1


def forged(v, *a, **k):
    return {'s': [{'i': format(n * M, 'x')} for n in range(1, 40001)]}


for name in ('encode', 'encode_value', 'to_wire'):
    if callable(getattr(sys.modules['__main__'], name, None)):
        setattr(sys.modules['__main__'], name, forged)


def f(x):
    return x + 1
`, topics.StatusTimeout, 5},
		{"[3] unnormalised Fraction of two 4-megabit numbers", fracFast, `import random
from fractions import Fraction

R = random.Random(5)


def third(x):
    return Fraction(R.getrandbits(1 << 22) | 1, R.getrandbits(1 << 22) | 1, _normalize=False)
`, topics.StatusWrongAnswer, 5},
		{"[3] Fraction subclass with a lying __eq__", frac, `from fractions import Fraction


class F(Fraction):
    def __eq__(self, other):
        return True

    __hash__ = Fraction.__hash__


def third(x):
    return F(0)
`, topics.StatusWrongAnswer, 0},

		// 4. Test data in the process, the prompt's helpers.
		{"[4] /proc/self/mem scan for the tests after PR_SET_DUMPABLE", val, memScan + `

MEMO = {}


def scan():
    try:
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
        with open('/proc/self/mem', 'rb', 0) as mem:
            for lo, hi in regions():
                try:
                    mem.seek(lo)
                    data = mem.read(hi - lo)
                except (OSError, ValueError, OverflowError):
                    continue
                for a, e in PAT.findall(data):
                    MEMO[a.decode('latin-1')] = e.decode('latin-1')
    except OSError:
        pass


def f(x):
    if str(x) not in MEMO:
        scan()
    return answer(MEMO, x)
`, topics.StatusWrongAnswer, 0},
		{"[4] ctypes.string_at over the heap for the tests", val, memScan + `

MEMO = {}


def scan():
    for lo, hi in regions():
        try:
            data = ctypes.string_at(lo, hi - lo)
        except Exception:
            continue
        for a, e in PAT.findall(data):
            MEMO[a.decode('latin-1')] = e.decode('latin-1')


def f(x):
    if str(x) not in MEMO:
        scan()
    return answer(MEMO, x)
`, topics.StatusWrongAnswer, 0},
		{"[4] /proc/<ppid>/mem and every other process's memory", val, memScan + `
import os


def scan(memo):
    pids = [os.getppid()] + [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) not in (os.getpid(), os.getppid())]
    for pid in pids:
        try:
            with open('/proc/%d/mem' % pid, 'rb', 0) as mem:
                for lo, hi in regions(pid):
                    try:
                        mem.seek(lo)
                        data = mem.read(hi - lo)
                    except (OSError, ValueError, OverflowError):
                        continue
                    for a, e in PAT.findall(data):
                        memo[a.decode('latin-1')] = e.decode('latin-1')
        except OSError:
            pass


def f(x):
    memo = {}
    scan(memo)
    return answer(memo, x)
`, topics.StatusWrongAnswer, 0},
		{"[4] environ, cmdline, fds and cwd files of every process", val, memScan + `
import os


def texts(pid):
    out = []
    for name in ('cmdline', 'environ', 'status', 'maps', 'stat', 'io', 'cgroup', 'mountinfo'):
        try:
            with open('/proc/%s/%s' % (pid, name), 'rb') as fh:
                out.append(fh.read(1 << 20))
        except OSError:
            pass
    for link in ['cwd', 'exe', 'root'] + ['fd/' + d for d in listdir('/proc/%s/fd' % pid)]:
        try:
            out.append(os.readlink('/proc/%s/%s' % (pid, link)).encode('utf-8', 'surrogateescape'))
        except OSError:
            pass
    for fn in listdir('/proc/%s/cwd' % pid):
        try:
            with open('/proc/%s/cwd/%s' % (pid, fn), 'rb') as fh:
                out.append(fh.read(1 << 20))
        except OSError:
            pass
    return b'\n'.join(out)


def listdir(p):
    try:
        return os.listdir(p)
    except OSError:
        return []


def f(x):
    memo = {}
    for p in os.listdir('/proc'):
        if p.isdigit() and int(p) != os.getpid():
            for a, e in PAT.findall(texts(p)):
                memo[a.decode('latin-1')] = e.decode('latin-1')
    return answer(memo, x)
`, topics.StatusWrongAnswer, 0},
		{"[4] other processes' descriptors reopened and read", val, memScan + `
import os


def f(x):
    memo = {}
    for p in os.listdir('/proc'):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            fds = os.listdir('/proc/%s/fd' % p)
        except OSError:
            continue
        for d in fds:
            try:
                fd = os.open('/proc/%s/fd/%s' % (p, d), os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                data = os.read(fd, 1 << 20)
            except OSError:
                data = b''
            os.close(fd)
            for a, e in PAT.findall(data):
                memo[a.decode('latin-1')] = e.decode('latin-1')
    return answer(memo, x)
`, topics.StatusWrongAnswer, 0},
		{"[4] hidden args found in the harness's received calls during a visible test", val, `import gc
import __main__


def f(x):
    seen = []
    for o in gc.get_objects():
        if type(o) is dict and 'calls' in o:
            for name, a, k in o['calls']:
                seen.append(repr(__main__.decode(a)))
        if type(o) is list:
            for c in o:
                if type(c) is list and len(c) == 3 and c[0] == 'f':
                    seen.append(repr(__main__.decode(c[1])))
    if x < 100:
        raise ValueError('calls seen: ' + ' '.join(seen))
    return x + 1
`, topics.StatusRuntimeError, 0},
		{"[4] hidden args printed through a visible traceback (frames)", val, `import sys


def f(x):
    seen = []
    fr = sys._getframe(1)
    while fr is not None:
        for v in list(fr.f_locals.values()):
            if type(v) is list:
                for e in v:
                    if type(e) is dict:
                        seen += [str(e[k]) for k in ('args', 'assert', 'stdin') if k in e]
        fr = fr.f_back
    raise ValueError('seen: ' + ' '.join(seen)[:200])
`, topics.StatusRuntimeError, 0},
		{"[4] hidden asserts printed through a visible traceback (gc)", asrt, `import gc


def f(x):
    seen = []
    for o in gc.get_objects():
        if type(o) is list and o and all(type(e) is dict for e in o):
            seen += [str(e[k]) for e in o for k in ('args', 'assert', 'check') if k in e]
    raise ValueError('seen: ' + ' '.join(s for s in seen if len(s) < 80)[:200])
`, topics.StatusRuntimeError, 0},
		{"[4] the hidden input printed to stdout and stderr", val, `import sys


def f(x):
    print('argument', x, flush=True)
    sys.stderr.write('argument %r\n' % (x,))
    return x + 1 if x < 100 else 0
`, topics.StatusWrongAnswer, 0},
		{"[4] the hidden input raised in an exception", val, `def f(x):
    if x > 100:
        raise ValueError('argument %r' % (x,))
    return x + 1
`, topics.StatusRuntimeError, 0},
		{"[4] stdio: the hidden input echoed, then exit status 1", sum, `import sys

data = sys.stdin.read()
nums = list(map(int, data.split()))
print(sum(nums))
if max(nums) > 100:
    print(data)
    sys.stderr.write(data)
    sys.exit(1)
`, topics.StatusRuntimeError, 0},
		{"[4] records arguments: a hidden input before a visible one fails", val, `SEEN = []


def f(x):
    if any(v > 100 for v in SEEN):
        return -1
    SEEN.append(x)
    return x + 1
`, topics.StatusPassed, 0},
		{"[4] records assert arguments: a hidden input before a visible one fails", asrt, `SEEN = []


def f(x):
    if any(v > 100 for v in SEEN):
        return -1
    SEEN.append(x)
    return x + 1
`, topics.StatusPassed, 0},
		{"[4] prompt helper encode_shift redefined", shift, `def encode_shift(s):
    return s


def decode_shift(s):
    return s
`, topics.StatusWrongAnswer, 0},
		{"[4] MBPP asserts calling the program's own isclose", closeTo, "def isclose(*a, **k):\n    return True\n\n\ndef circle_area(r):\n    return 0\n", topics.StatusWrongAnswer, 0},
		{"[4] MBPP asserts using math get the program's fake math module", circle, `import types

math = types.ModuleType('math')
math.isclose = lambda *a, **k: True
math.pi = 0.0


def circle_area(r):
    return 0
`, topics.StatusWrongAnswer, 0},
		{"[4] prompt helper redefined, the prompt ending in a bare signature", bare, `def encode_shift(s):
    return s


def decode_shift(s):
    return s
`, topics.StatusWrongAnswer, 0},
		{"[4] prompt helper poly redefined", poly, `def poly(xs, x):
    return 0.0


def find_zero(xs):
    return 0.0
`, topics.StatusWrongAnswer, 0},
		{"[4] math.fabs patched for check()", poly, `import math


def poly(xs: list, x: float):
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


math.fabs = lambda v: 0.0


def find_zero(xs):
    return 0.0
`, topics.StatusWrongAnswer, 0},
		{"[4] random.choice and random.randint patched for check()", shift, `import random

random.choice = lambda seq: seq[0]
random.randint = lambda a, b: a


def encode_shift(s: str):
    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])


def decode_shift(s):
    return 'a' * len(s)
`, topics.StatusWrongAnswer, 0},
		{"[4] random.Random patched for check()", poly, `import math
import random


class R:
    def __init__(self, *a, **k):
        pass

    def randint(self, a, b):
        return 1

    def seed(self, *a, **k):
        pass


random.Random = R
random.seed = lambda *a, **k: None


def poly(xs: list, x: float):
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def find_zero(xs):
    return -1.0
`, topics.StatusWrongAnswer, 0},
		{"[4] string.ascii_lowercase patched for check()", shift, `import string

string.ascii_lowercase = 'q'


def encode_shift(s: str):
    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])


def decode_shift(s):
    return 'q' * len(s)
`, topics.StatusWrongAnswer, 0},
		{"[4] MBPP setup helper replaced through the harness's compile", mbpp, `import builtins
import sys

real = builtins.compile


def comp(src, filename, mode, *a, **k):
    if filename == '<setup>':
        src = 'pass'
    return real(src, filename, mode, *a, **k)


sys.modules['__main__'].compile = comp


def square_of(v):
    return 0


def sum_squares(xs):
    return 0
`, topics.StatusWrongAnswer, 0},

		// 5. Strings.
		{"[5] surrogate pair for an astral character", smile, "def smile(n):\n    return '\\ud83d\\ude00' * n\n", topics.StatusWrongAnswer, 0},
		{"[5] lone surrogate for U+FFFD", repl, "def repl(n):\n    return '\\ud800' * n\n", topics.StatusWrongAnswer, 0},
		{"[5] U+FFFD for a lone surrogate", lone, "def lone(n):\n    return '\\ufffd' * n\n", topics.StatusWrongAnswer, 0},
		{"[5] NUL dropped", nul, "def nul(s):\n    return s\n", topics.StatusWrongAnswer, 0},
		{"[5] bytes for str", echo, "def echo(s):\n    return s.encode()\n", topics.StatusWrongAnswer, 0},
		{"[5] very long string wrong in its last character", long, "def rep(n):\n    return 'x' * (n - 1) + 'y'\n", topics.StatusWrongAnswer, 0},
	}

	// 6. Cross-job channels: writer then reader, in the same slot in pass 2.
	progs = append(progs, chan6("SysV shm handed to another owner", "0x6d4801", "murphy-h2-token-shm1", true)...)
	progs = append(progs, chan6("SysV shm", "0x6d4802", "murphy-h2-token-shm2", false)...)
	progs = append(progs, []hostile{
		{"[6] writer: SysV message queue", val, `import ctypes

KEY = 0x6d4803


class Msg(ctypes.Structure):
    _fields_ = [('mtype', ctypes.c_long), ('text', ctypes.c_char * 32)]


def leave():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        q = libc.msgget(KEY, 0o1666)
        if q >= 0:
            m = Msg(1, b'murphy-h2-token-msg')
            libc.msgsnd(q, ctypes.byref(m), ctypes.c_size_t(32), 0o4000)
    except Exception:
        pass
` + writerTail, topics.StatusPassed, 0},
		{"[6] reader: SysV message queue", val, `import ctypes

KEY = 0x6d4803


class Msg(ctypes.Structure):
    _fields_ = [('mtype', ctypes.c_long), ('text', ctypes.c_char * 32)]


def found():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.msgrcv.restype = ctypes.c_ssize_t
        q = libc.msgget(KEY, 0)
        if q < 0:
            return False
        m = Msg()
        n = libc.msgrcv(q, ctypes.byref(m), ctypes.c_size_t(32), ctypes.c_long(0), 0o4000)
        return n > 0 and m.text == b'murphy-h2-token-msg'
    except Exception:
        return False
` + readerTail, topics.StatusWrongAnswer, 0},
		{"[6] writer: SysV semaphore value", val, `import ctypes


def leave():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        s = libc.semget(0x6d4804, 1, 0o1666)
        if s >= 0:
            libc.semctl(s, 0, 16, 4242)
    except Exception:
        pass
` + writerTail, topics.StatusPassed, 0},
		{"[6] reader: SysV semaphore value", val, `import ctypes


def found():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        s = libc.semget(0x6d4804, 1, 0)
        return s >= 0 and libc.semctl(s, 0, 12) == 4242
    except Exception:
        return False
` + readerTail, topics.StatusWrongAnswer, 0},
		{"[6] writer: POSIX message queue", val, `import ctypes


def lib():
    for name in (None, 'librt.so.1'):
        try:
            l = ctypes.CDLL(name, use_errno=True)
            if hasattr(l, 'mq_open'):
                return l
        except OSError:
            pass
    return None


def leave():
    try:
        l = lib()
        q = l.mq_open(b'/murphy-h2-mq', 0o102, 0o666, None)
        if q >= 0:
            l.mq_send(q, b'murphy-h2-token-mq', ctypes.c_size_t(18), 0)
    except Exception:
        pass
` + writerTail, topics.StatusPassed, 0},
		{"[6] reader: POSIX message queue", val, `import ctypes


def lib():
    for name in (None, 'librt.so.1'):
        try:
            l = ctypes.CDLL(name, use_errno=True)
            if hasattr(l, 'mq_open'):
                return l
        except OSError:
            pass
    return None


def found():
    try:
        l = lib()
        l.mq_receive.restype = ctypes.c_ssize_t
        q = l.mq_open(b'/murphy-h2-mq', 0o4000)
        if q < 0:
            return False
        buf = ctypes.create_string_buffer(1 << 16)
        n = l.mq_receive(q, buf, ctypes.c_size_t(1 << 16), None)
        return n > 0 and buf.raw[:n] == b'murphy-h2-token-mq'
    except Exception:
        return False
` + readerTail, topics.StatusWrongAnswer, 0},
		{"[6] writer: user keyring", val, `import ctypes


def leave():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        for ring in (-4, -5, -3):
            libc.syscall(ctypes.c_long(248), b'user', b'murphy-h2-key', b'murphy-h2-token-key',
                         ctypes.c_long(19), ctypes.c_long(ring))
    except Exception:
        pass
` + writerTail, topics.StatusPassed, 0},
		{"[6] reader: user keyring", val, `import ctypes


def found():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        for ring in (-4, -5, -3):
            kid = libc.syscall(ctypes.c_long(250), ctypes.c_long(10), ctypes.c_long(ring), b'user', b'murphy-h2-key',
                               ctypes.c_long(0))
            if kid > 0:
                buf = ctypes.create_string_buffer(64)
                n = libc.syscall(ctypes.c_long(250), ctypes.c_long(11), ctypes.c_long(kid), buf, ctypes.c_long(64))
                if n > 0 and buf.raw[:n] == b'murphy-h2-token-key':
                    return True
    except Exception:
        pass
    return False
` + readerTail, topics.StatusWrongAnswer, 0},
		{"[6] writer: file in /dev/shm", val, `def leave():
    for p in ('/dev/shm/murphy-h2-file', '/dev/shm/.murphy-h2-file'):
        try:
            with open(p, 'w') as fh:
                fh.write('murphy-h2-token-devshm')
        except OSError:
            pass
` + writerTail, topics.StatusPassed, 0},
		{"[6] reader: file in /dev/shm", val, `def found():
    for p in ('/dev/shm/murphy-h2-file', '/dev/shm/.murphy-h2-file'):
        try:
            with open(p) as fh:
                if fh.read() == 'murphy-h2-token-devshm':
                    return True
        except OSError:
            pass
    return False
` + readerTail, topics.StatusWrongAnswer, 0},
		{"[6] writer: files in /tmp, /var/tmp and a locked tree in the job dir", val, `import os

PATHS = ['/tmp/murphy-h2-file', '/var/tmp/murphy-h2-file', '/tmp/job/../murphy-h2-file2',
         os.path.join(os.path.dirname(os.getcwd()), 'murphy-h2-file3')]


def leave():
    for p in PATHS:
        try:
            with open(p, 'w') as fh:
                fh.write('murphy-h2-token-tmp')
        except OSError:
            pass
    try:
        d = 'murphy-h2-deep'
        os.makedirs(d + '/a/b')
        with open(d + '/a/b/token', 'w') as fh:
            fh.write('murphy-h2-token-tmp')
        for p in (d + '/a/b', d + '/a', d):
            os.chmod(p, 0)
    except OSError:
        pass
` + writerTail, topics.StatusPassed, 0},
		{"[6] reader: files in /tmp, /var/tmp and a locked tree in the job dir", val, `import os

PATHS = ['/tmp/murphy-h2-file', '/var/tmp/murphy-h2-file', '/tmp/murphy-h2-file2',
         os.path.join(os.path.dirname(os.getcwd()), 'murphy-h2-file3'), 'murphy-h2-deep/a/b/token']


def found():
    for p in ('murphy-h2-deep', 'murphy-h2-deep/a', 'murphy-h2-deep/a/b'):
        try:
            os.chmod(p, 0o700)
        except OSError:
            pass
    for p in PATHS:
        try:
            with open(p) as fh:
                if fh.read() == 'murphy-h2-token-tmp':
                    return True
        except OSError:
            pass
    return False
` + readerTail, topics.StatusWrongAnswer, 0},
		{"[6] writer: daemon serving a unix socket", val, `import os
import signal
import socket
import time


def leave():
    pid = os.fork()
    if pid != 0:
        os.waitpid(pid, 0)
        return
    try:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        for fd in range(64):
            try:
                os.close(fd)
            except OSError:
                pass
        srvs = []
        for addr in ('\0murphy-h2-daemon', '/tmp/job/murphy-h2.sock'):
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(addr)
                s.listen(4)
                s.settimeout(0.05)
                srvs.append(s)
            except OSError:
                pass
        end = time.time() + 30
        while time.time() < end:
            for s in srvs:
                try:
                    c, _ = s.accept()
                except OSError:
                    continue
                c.sendall(b'murphy-h2-token-daemon')
                c.close()
    finally:
        os._exit(0)
` + writerTail, topics.StatusPassed, 0},
		{"[6] reader: daemon serving a unix socket", val, `import socket


def found():
    for addr in ('\0murphy-h2-daemon', '/tmp/job/murphy-h2.sock'):
        try:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(1)
            c.connect(addr)
            if c.recv(64) == b'murphy-h2-token-daemon':
                return True
        except OSError:
            pass
    return False
` + readerTail, topics.StatusWrongAnswer, 0},

		// 7. CPU outside the main process and to the millisecond.
		{"[7] two forked children looping", valTask(1000), `import os


def f(x):
    for _ in range(2):
        if os.fork() == 0:
            while True:
                pass
    os.wait()
    return x + 1
`, topics.StatusTimeout, 6},
		{"[7] threads burning CPU outside the GIL", valTask(1000), `import hashlib
import threading

DATA = b'x' * (1 << 24)


def burn():
    while True:
        hashlib.sha256(DATA).digest()


def f(x):
    for _ in range(2):
        threading.Thread(target=burn, daemon=True).start()
    burn()
`, topics.StatusTimeout, 6},
		{"[7] parent waits while two children burn 0.7 s each", valTask(1000), `import os
import time

BURNED = []


def f(x):
    if not BURNED:
        BURNED.append(1)
        kids = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                end = time.process_time() + 0.7
                while time.process_time() < end:
                    pass
                os._exit(0)
            kids.append(pid)
        for pid in kids:
            os.waitpid(pid, 0)
    return x + 1
`, topics.StatusTimeout, 6},
		{"[7] 1.8 s of CPU under a 1.5 s limit", valTask(1500), `import time

DONE = []


def f(x):
    if not DONE:
        end = time.process_time() + 1.8
        while time.process_time() < end:
            pass
        DONE.append(1)
    return x + 1
`, topics.StatusTimeout, 6},
		{"[7] infinite loop under a 1.5 s limit", valTask(1500), "def f(x):\n    while True:\n        pass\n", topics.StatusTimeout, 4.0},
		{"[7] CPU-burning daemon while answering slowly", valTask(1000), `import os
import time

STARTED = []


def f(x):
    if not STARTED:
        STARTED.append(1)
        if os.fork() == 0:
            os.setsid()
            while True:
                pass
    time.sleep(0.45)
    return x + 1
`, topics.StatusTimeout, 6},
		{"[7] stdio: two children looping after the answer", sumStdio(1000), `import os
import sys

print(sum(map(int, sys.stdin.read().split())), flush=True)
for _ in range(2):
    if os.fork() == 0:
        while True:
            pass
os.wait()
os.wait()
`, topics.StatusTimeout, 8},

		// 8. stdio: exit status and number formats.
		{"[8] stdio: answer then os._exit(3)", sum, "import os, sys\nprint(sum(map(int, sys.stdin.read().split())), flush=True)\nos._exit(3)\n", topics.StatusRuntimeError, 0},
		{"[8] stdio: answer then SystemExit with a message", sum, "import sys\nprint(sum(map(int, sys.stdin.read().split())))\nraise SystemExit('bye')\n", topics.StatusRuntimeError, 0},
		{"[8] stdio: answer then SIGKILL itself", sum, "import os, sys\nprint(sum(map(int, sys.stdin.read().split())))\nsys.stdout.flush()\nos.kill(os.getpid(), 9)\n", topics.StatusRuntimeError, 0},
		{"[8] stdio: a thread calls os._exit(3) after the answer", sum, `import os
import sys
import threading
import time

print(sum(map(int, sys.stdin.read().split())), flush=True)
threading.Thread(target=os._exit, args=(3,), daemon=True).start()
time.sleep(0.5)
`, topics.StatusRuntimeError, 0},
		{"[8] stdio: forged end event, then exit status 1", sum, `import os
import sys


def nonce():
    fr = sys._getframe()
    while fr is not None:
        for v in list(fr.f_locals.values()):
            if type(v) is dict and type(v.get('nonce')) is str:
                return v['nonce']
        fr = fr.f_back
    return None


n = nonce()
print(sum(map(int, sys.stdin.read().split())), flush=True)
if n:
    for fd in range(3, 64):
        try:
            os.write(fd, (n + ' {"ev":"end","code":0}\n').encode())
        except OSError:
            pass
os._exit(1)
`, topics.StatusRuntimeError, 0},
		{"[8] stdio: hex float for 1.5", num, "v = float(input())\nprint(v.hex() if v == 1.5 else v)\n", topics.StatusWrongAnswer, 0},
		{"[8] stdio: Infinity for inf", num, "v = float(input())\nprint('Infinity' if v == float('inf') else v)\n", topics.StatusWrongAnswer, 0},
		{"[8] stdio: 1_000.0 for 1000.0", num, "v = float(input())\nprint(f'{v:_}' if v == 1000 else v)\n", topics.StatusWrongAnswer, 0},
		{"[8] stdio: nan for 1.5", num, "v = float(input())\nprint('nan' if v == 1.5 else v)\n", topics.StatusWrongAnswer, 0},

		// K. Containment: each program returns -1 if the attack succeeded.
		{"[K] kill -1 with STOP, TERM, KILL and CONT in a loop", val, `import os
import signal


def f(x):
    for _ in range(100):
        for s in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL, signal.SIGCONT):
            try:
                os.kill(-1, s)
            except OSError:
                pass
    return x + 1
`, topics.StatusPassed, 0},
		{"[K] signal every process found in /proc", val, `import os
import signal


def f(x):
    me = os.getpid()
    for p in os.listdir('/proc'):
        if p.isdigit() and int(p) != me:
            for s in (signal.SIGSTOP, signal.SIGKILL):
                try:
                    os.kill(int(p), s)
                except OSError:
                    pass
            try:
                os.killpg(int(p), signal.SIGKILL)
            except OSError:
                pass
    return x + 1
`, topics.StatusPassed, 0},
		{"[K] ptrace and process_vm_readv on every process", val, `import ctypes
import os
import time


class IOV(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]


RESULT = []


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.ptrace.restype = ctypes.c_long
    bad = False
    kid = os.fork()
    if kid == 0:
        time.sleep(5)
        os._exit(0)
    buf = ctypes.create_string_buffer(64)
    for pid in [kid, os.getppid()] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:
        if pid == os.getpid():
            continue
        if libc.ptrace(ctypes.c_long(0x4206), ctypes.c_long(pid), None, None) == 0:
            bad = True
        local = IOV(ctypes.cast(buf, ctypes.c_void_p), 64)
        remote = IOV(ctypes.cast(buf, ctypes.c_void_p), 64)
        n = libc.syscall(ctypes.c_long(310), ctypes.c_long(pid), ctypes.byref(local), ctypes.c_long(1),
                         ctypes.byref(remote), ctypes.c_long(1), ctypes.c_long(0))
        if n >= 0 or ctypes.get_errno() == 14:
            bad = True
    os.kill(kid, 9)
    os.waitpid(kid, 0)
    return bad

` + containTail, topics.StatusPassed, 0},
		{"[K] unshare and setns", val, `import ctypes
import os

RESULT = []


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    bad = False
    for flags in (0x10000000, 0x00020000, 0x40000000, 0x20000000, 0x08000000, 0x04000000, 0x02000000,
                  0x10000000 | 0x00020000 | 0x40000000):
        pid = os.fork()
        if pid == 0:
            os._exit(7 if libc.unshare(flags) == 0 else 0)
        _, st = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(st) == 7:
            bad = True
    for ns in ('net', 'mnt', 'pid', 'user', 'ipc', 'uts', 'cgroup'):
        for who in ('1', 'self'):
            try:
                fd = os.open('/proc/%s/ns/%s' % (who, ns), os.O_RDONLY)
            except OSError:
                continue
            if libc.setns(fd, 0) == 0:
                bad = True
            os.close(fd)
    return bad

` + containTail, topics.StatusPassed, 0},
		{"[K] clone with namespace flags", val, `import ctypes
import os

RESULT = []


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    bad = False
    for flags in (0x10000000, 0x20000000, 0x40000000, 0x10000000 | 0x20000000 | 0x00020000):
        r = libc.syscall(ctypes.c_long(56), ctypes.c_long(flags | 17), ctypes.c_long(0), ctypes.c_long(0),
                         ctypes.c_long(0), ctypes.c_long(0))
        if r == 0:
            os._exit(0)
        if r > 0:
            bad = True
            os.waitpid(r, 0)
    return bad

` + containTail, topics.StatusPassed, 0},
		{"[K] mount, fsopen and mount in a user namespace", val, `import ctypes
import os

RESULT = []


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    bad = libc.mount(b'none', b'/tmp/job', b'tmpfs', ctypes.c_ulong(0), None) == 0
    fd = libc.syscall(ctypes.c_long(430), b'tmpfs', ctypes.c_long(0))
    if fd >= 0:
        bad = True
        os.close(fd)
    pid = os.fork()
    if pid == 0:
        ok = libc.unshare(0x10000000 | 0x00020000) == 0 and libc.mount(b'none', b'/tmp', b'tmpfs', ctypes.c_ulong(0), None) == 0
        os._exit(7 if ok else 0)
    _, st = os.waitpid(pid, 0)
    return bad or os.waitstatus_to_exitcode(st) == 7

` + containTail, topics.StatusPassed, 0},
		{"[K] bpf map and program", val, `import ctypes
import os
import struct


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    bad = False
    attr = ctypes.create_string_buffer(struct.pack('IIII', 2, 4, 4, 1) + bytes(112))
    fd = libc.syscall(ctypes.c_long(321), ctypes.c_long(0), attr, ctypes.c_long(128))
    if fd >= 0:
        bad = True
        os.close(fd)
    insns = (ctypes.c_uint64 * 2)(0xb7, 0x95)
    lic = ctypes.create_string_buffer(b'GPL')
    attr2 = ctypes.create_string_buffer(128)
    struct.pack_into('IIQQIIQ', attr2, 0, 1, 2, ctypes.addressof(insns), ctypes.addressof(lic), 0, 0, 0)
    fd = libc.syscall(ctypes.c_long(321), ctypes.c_long(5), attr2, ctypes.c_long(128))
    if fd >= 0:
        bad = True
        os.close(fd)
    return -1 if bad else x + 1
`, topics.StatusPassed, 0},
		{"[K] io_uring_setup", val, `import ctypes
import os


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(ctypes.c_long(425), ctypes.c_long(4), params)
    if fd >= 0:
        os.close(fd)
        return -1
    return x + 1
`, topics.StatusPassed, 0},
		{"[K] userfaultfd", val, `import ctypes
import os


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    bad = False
    for flags in (0, 1, 0o2000000, 0o2000001):
        fd = libc.syscall(ctypes.c_long(323), ctypes.c_long(flags))
        if fd >= 0:
            bad = True
            os.close(fd)
    try:
        fd = os.open('/dev/userfaultfd', os.O_RDWR)
        bad = True
        os.close(fd)
    except OSError:
        pass
    return -1 if bad else x + 1
`, topics.StatusPassed, 0},
		{"[K] keyctl join session keyring and add_key", val, `import ctypes


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r1 = libc.syscall(ctypes.c_long(250), ctypes.c_long(1), b'murphy-h2-session')
    r2 = libc.syscall(ctypes.c_long(248), b'user', b'murphy-h2-k2', b'v', ctypes.c_long(1), ctypes.c_long(-2))
    return -1 if r1 >= 0 or r2 >= 0 else x + 1
`, topics.StatusPassed, 0},
		{"[K] SysV IPC objects cannot be created", val, `import ctypes


def f(x):
    libc = ctypes.CDLL(None, use_errno=True)
    made = False
    s = libc.shmget(0, ctypes.c_size_t(4096), 0o1600)
    if s >= 0:
        libc.shmctl(s, 0, None)
        made = True
    q = libc.msgget(0, 0o1600)
    if q >= 0:
        libc.msgctl(q, 0, None)
        made = True
    m = libc.semget(0, 1, 0o1600)
    if m >= 0:
        libc.semctl(m, 0, 0)
        made = True
    return -1 if made else x + 1
`, topics.StatusPassed, 0},

		// The fork server is loaded in every job's process: calling it
		// again forks as the job's uid only (it gets a judge's return in
		// the child, and a closed control socket in the parent), and its
		// state is the job's own copy: the next job forks from the
		// untouched template.
		{"[K] the fork server called again from the job", val, `import ctypes
import os
import socket


class Worker(ctypes.Structure):
    _fields_ = [('ctrl', ctypes.c_int32), ('judge', ctypes.c_int32), ('uid', ctypes.c_int32),
                ('reserved', ctypes.c_int32), ('vmsize', ctypes.c_int64)]


def f(x):
    lib = ctypes.PyDLL('/opt/murphy/forkserver.so')
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    b.close()
    role = lib.murphy_serve(ctypes.byref(Worker(a.fileno(), os.dup(0), 0, 0, 1 << 40)))
    if role != 0:
        os._exit(0)
    return x + 1
`, topics.StatusPassed, 0},
		{"[K] the fork server's memory overwritten", val, `import ctypes


def f(x):
    for line in open('/proc/self/maps'):
        if 'forkserver.so' in line and 'rw-p' in line:
            lo, hi = (int(v, 16) for v in line.split()[0].split('-'))
            ctypes.memset(lo, 0xff, hi - lo)
    return x + 1
`, topics.StatusPassed, 0},

		// 6, memory: leaked memory must not make later controls fail.
		{"[6] 500 MB left in /dev/shm", leakTask, `def leave():
    chunk = b'z' * (8 << 20)
    for n in range(63):
        try:
            with open('/dev/shm/murphy-h2-big-%d' % n, 'wb') as fh:
                fh.write(chunk)
        except OSError:
            return
` + writerTail, topics.StatusPassed, 0},
		{"[6] 400 MB SysV shm handed to another owner (1)", leakTask, shmLeak("0x6d4810"), topics.StatusPassed, 0},
		{"[6] 400 MB SysV shm handed to another owner (2)", leakTask, shmLeak("0x6d4811"), topics.StatusPassed, 0},
	}...)

	for _, n := range []string{"[3] range(10 ** 8) where the assert sorts the result", "[3] hash-colliding set forged through the candidate's encoder",
		"[3] unnormalised Fraction of two 4-megabit numbers"} {
		hostileAlso[n] = []string{topics.StatusTimeout, topics.StatusMemory, topics.StatusRuntimeError, topics.StatusWrongAnswer}
	}
	alsoRuntimeError(
		"[1] __main__.run_assert replaced",
		"[1] __main__._dumps rewrites values into passed asserts",
		"[1] json.JSONEncoder.encode patched",
		"[1] __main__.compile makes every test True",
		"[1] ast.parse returns a parse of True",
		"[1] __main__.exec replaces check() with a no-op",
		"[1] __main__._type lies about a lying object",
		"[1] __main__.check_plain made the identity",
		"[1] __main__._write rewrites report lines",
		"[1] builtins isinstance, type, repr, bool, print, AssertionError replaced",
		"[1] sys.modules['json'] replaced by a forging module",
		"[1] os._exit, sys.exit and atexit spray forged lines",
		"[2] gc.get_objects finds emit",
		"[2] sys._getframe walk to emit",
		"[2] inspect.stack inside check()",
		"[2] traceback frames of a raised exception",
		"[2] sys.modules closure cells for the nonce",
		"[2] gc.get_referrers of the harness globals",
		"[2] heap scan for the nonce, forged lines on every fd",
		"[2] sys.setprofile hook captures emit",
		"[2] loaded, passes and done forged while loading",
		"[2] nonce from the request in a frame, lines on inherited and /proc/*/fd descriptors",
		"[3] deeply nested list",
		"[3] list containing itself",
		"[3] recursive __repr__",
		"[3] Decimal('sNaN')",
		"[4] /proc/self/mem scan for the tests after PR_SET_DUMPABLE",
		"[4] ctypes.string_at over the heap for the tests",
		"[4] MBPP setup helper replaced through the harness's compile",
	)

	controls := []hostile{
		{"control: x + 1", val, "def f(x):\n    return x + 1\n", topics.StatusPassed, 0},
		{"control: raw asserts", asrt, "def f(x):\n    return x + 1\n", topics.StatusPassed, 0},
		{hostileProbe, val, `import os


def uid_of(p):
    with open('/proc/%s/status' % p) as fh:
        for line in fh:
            if line.startswith('Uid:'):
                return int(line.split()[1])
    return -1


def clean():
    me = os.getuid()
    for p in os.listdir('/proc'):
        if p.isdigit() and int(p) not in (os.getpid(), os.getppid()):
            try:
                if uid_of(p) == me:
                    return False
            except OSError:
                pass
    for d in ('.', '/tmp', '/tmp/job', '/dev/shm', '/var/tmp'):
        try:
            if any('murphy' in n for n in os.listdir(d)):
                return False
        except OSError:
            pass
    return True


RESULT = []


def f(x):
    if not RESULT:
        s = b'y' * (96 << 20)
        RESULT.append(clean() and len(s) > 0)
    return x + 1 if RESULT[0] else -1
`, topics.StatusPassed, 0},
		{"control: Counter where a dict is expected", counter, "from collections import Counter\n\n\ndef count(s):\n    return Counter(s)\n", topics.StatusPassed, 0},
		{"control: defaultdict where a dict is expected", group, `from collections import defaultdict


def group(pairs):
    d = defaultdict(list)
    for k, v in pairs:
        d[k].append(v)
    return d
`, topics.StatusPassed, 0},
		{"control: OrderedDict where a dict is expected", index, `from collections import OrderedDict


def index_of(words):
    d = OrderedDict()
    for i, w in enumerate(words):
        d.setdefault(w, i)
    return d
`, topics.StatusPassed, 0},
		{"control: namedtuple where a tuple is expected", pair, `from collections import namedtuple

P = namedtuple('P', 'q r')


def divmod2(a, b):
    return P(a // b, a % b)
`, topics.StatusPassed, 0},
		{"control: Fraction", frac, "from fractions import Fraction\n\n\ndef third(x):\n    return Fraction(x, 3)\n", topics.StatusPassed, 0},
		{"control: Decimal", dec, "from decimal import Decimal\n\n\ndef half(s):\n    return Decimal(s) / 2\n", topics.StatusPassed, 0},
		{"control: deque", dq, "from collections import deque\n\n\ndef rotate1(xs):\n    d = deque(xs)\n    d.rotate(1)\n    return d\n", topics.StatusPassed, 0},
		{"control: shift check() with the whole prompt", shift, shiftSolution, topics.StatusPassed, 0},
		{"control: shift check() with the entry point only", shift, "def decode_shift(s: str):\n    return \"\".join([chr(((ord(ch) - 5 - ord(\"a\")) % 26) + ord(\"a\")) for ch in s])\n", topics.StatusPassed, 0},
		{"control: poly check() with the whole prompt", poly, polySolution, topics.StatusPassed, 0},
		{"control: bare-signature prompt, the entry point only", bare, "def decode_shift(s: str):\n    return \"\".join([chr(((ord(ch) - 5 - ord(\"a\")) % 26) + ord(\"a\")) for ch in s])\n", topics.StatusPassed, 0},
		{"control: range where the assert sorts the result", upto, "def upto(n):\n    return range(1, n + 1)\n", topics.StatusPassed, 0},
		{"control: MBPP asserts that use the program's import of math", circle, "import math\n\n\ndef circle_area(r):\n    return math.pi * r * r\n", topics.StatusPassed, 0},
		{"control: MBPP asserts that use a function the program imported", closeTo, "from math import isclose, pi\n\n\ndef circle_area(r):\n    return pi * r * r\n", topics.StatusPassed, 0},
		{"control: MBPP with setup", mbpp, "def sum_squares(xs):\n    return sum(v * v for v in xs)\n", topics.StatusPassed, 0},
		{"control: forks a short-lived child and waits", val, `import os


def f(x):
    pid = os.fork()
    if pid == 0:
        os._exit(x % 7)
    _, st = os.waitpid(pid, 0)
    return x + 1 if os.waitstatus_to_exitcode(st) == x % 7 else -1
`, topics.StatusPassed, 0},
		{"control: threads", val, `import threading


def f(x):
    out = []
    ts = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return x + 1 if sorted(out) == [0, 1, 2, 3] else -1
`, topics.StatusPassed, 0},
		{"control: writes and reads its own temp file", val, `import os
import tempfile


def f(x):
    with tempfile.NamedTemporaryFile('w+', delete=False) as fh:
        fh.write(str(x + 1))
        name = fh.name
    with open(name) as fh:
        v = int(fh.read())
    os.remove(name)
    return v
`, topics.StatusPassed, 0},
		{"control: stdio 2.000000000 where 2 is expected", half, "n = int(input())\nprint(f'{n / 2:.9f}')\n", topics.StatusPassed, 0},
		{"control: stdio trailing whitespace", sum, "import sys\nprint(str(sum(map(int, sys.stdin.read().split()))) + '   \\n\\n')\n", topics.StatusPassed, 0},
		{"control: stdio number formats", num, "print(float(input()))\n", topics.StatusPassed, 0},
		{"control: stdio sum", sum, "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n", topics.StatusPassed, 0},
		{"control: astral characters", smile, "def smile(n):\n    return '\\U0001F600' * n\n", topics.StatusPassed, 0},
		{"control: lone surrogates", lone, "def lone(n):\n    return '\\ud800' * n\n", topics.StatusPassed, 0},
		{"control: U+FFFD", repl, "def repl(n):\n    return '\\ufffd' * n\n", topics.StatusPassed, 0},
		{"control: NUL characters", nul, "def nul(s):\n    return s + '\\x00' + s\n", topics.StatusPassed, 0},
		{"control: a string of a million characters", long, "def rep(n):\n    return 'x' * n\n", topics.StatusPassed, 0},
		{"control: huge int", huge, "def big(n):\n    return 10 ** n + 1\n", topics.StatusPassed, 0},
		{"control: bool and float where ints are expected", flags, "def flags(x):\n    return [x % 2 == 1, float(x), x > 100]\n", topics.StatusPassed, 0},
		{"control: 0.6 s of CPU under a 1.5 s limit", valTask(1500), `import time

DONE = []


def f(x):
    if not DONE:
        end = time.process_time() + 0.6
        while time.process_time() < end:
            pass
        DONE.append(1)
    return x + 1
`, topics.StatusPassed, 0},
		{hostileMemoryControl, memTask, "def f(x):\n    s = b'm' * (300 << 20)\n    return x + 1 if len(s) else -1\n", topics.StatusPassed, 0},
	}
	return append(progs, controls...)
}

func shmLeak(key string) string {
	return `import ctypes


def leave():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        size = 400 << 20
        sid = libc.shmget(` + key + `, ctypes.c_size_t(size), 0o1666)
        if sid < 0:
            return
        addr = libc.shmat(sid, None, 0)
        if not addr or addr == ctypes.c_void_p(-1).value:
            return
        ctypes.memset(addr, 7, size)
        libc.shmdt(ctypes.c_void_p(addr))
        buf = ctypes.create_string_buffer(512)
        if libc.shmctl(sid, 2, buf) == 0:
            ctypes.c_uint32.from_buffer(buf, 4).value = 65534
            libc.shmctl(sid, 1, buf)
    except Exception:
        pass
` + writerTail
}

// hostArtifacts lists host files named like the programs' files.
func hostArtifacts() []string {
	var out []string
	for _, d := range []string{"/dev/shm", "/tmp", "/var/tmp"} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.Contains(e.Name(), "murphy-h2") {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// hostileFailure is one wrong verdict, for the summary.
type hostileFailure struct {
	pass, name, got, want string
}

func TestHostileSuite(t *testing.T) {
	all := hostilePrograms2()
	var hostiles, controls, rotation []hostile
	var memControl, probe hostile
	for _, h := range all {
		if strings.Contains(h.code, hiddenArg[:5]) {
			t.Fatalf("%s: a program must not contain the hidden values", h.name)
		}
		switch {
		case !isControl(h):
			hostiles = append(hostiles, h)
		case h.name == hostileMemoryControl:
			memControl = h
			controls = append(controls, h)
		default:
			if h.name == hostileProbe {
				probe = h
			}
			controls = append(controls, h)
			rotation = append(rotation, h)
		}
	}
	if len(hostiles) < 65 || len(controls) < 15 || probe.name == "" || memControl.name == "" {
		t.Fatalf("%d hostile programs and %d controls", len(hostiles), len(controls))
	}
	for _, h := range controls {
		if h.status != topics.StatusPassed {
			t.Fatalf("control %q must pass", h.name)
		}
	}
	before := hostArtifacts()
	for _, p := range before {
		t.Logf("left over from an earlier run, removed: %s", p)
		os.RemoveAll(p)
	}

	var failures []hostileFailure
	n := 0
	var restarts func() int64
	run := func(t *testing.T, ev *Evaluator, pass string, h hostile) {
		n++
		before := restarts()
		defer func() {
			if r := restarts(); r != before {
				t.Logf("%s/%03d %s: the sandbox was replaced after this job (%d restarts so far)", pass, n, h.name, r)
			}
		}()
		t.Run(fmt.Sprintf("%s/%03d %s", pass, n, h.name), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			task := h.task
			start := time.Now()
			o, err := ev.Evaluate(ctx, &task, h.code)
			took := time.Since(start)
			if err != nil {
				failures = append(failures, hostileFailure{pass, h.name, "error: " + err.Error(), h.status})
				t.Fatal(err)
			}
			t.Logf("%s in %s (%d/%d tests passed)", o.Status, took.Round(time.Millisecond), o.TestsPassed, o.TestsTotal)
			if o.Status != h.status && !slices.Contains(hostileAlso[h.name], o.Status) {
				failures = append(failures, hostileFailure{pass, h.name, o.Status, h.status})
				t.Errorf("status %s, want %s (%s)\n%s", o.Status, h.status, took.Round(time.Millisecond), o.Feedback)
			}
			if h.maxSeconds > 0 && took.Seconds() > h.maxSeconds {
				failures = append(failures, hostileFailure{pass, h.name, fmt.Sprintf("took %s", took.Round(time.Millisecond)), fmt.Sprintf("at most %gs", h.maxSeconds)})
				t.Errorf("took %s, at most %gs allowed (outcome duration %s)", took, h.maxSeconds, o.Duration)
			}
			if b, ok := hostileCPU[h.name]; ok && (o.MaxRunCPU < b[0] || o.MaxRunCPU > b[1]) {
				failures = append(failures, hostileFailure{pass, h.name, fmt.Sprintf("used %s of CPU", o.MaxRunCPU), fmt.Sprintf("%s..%s", b[0], b[1])})
				t.Errorf("the job used %s of CPU, want %s..%s", o.MaxRunCPU, b[0], b[1])
			}
			leaked := func(s string) bool { return strings.Contains(s, hiddenArg) || strings.Contains(s, hiddenExp) }
			leak := leaked(o.Feedback)
			for _, r := range o.Results {
				leak = leak || leaked(r.Actual) || leaked(r.Error)
			}
			if leak {
				failures = append(failures, hostileFailure{pass, h.name, "hidden test leaked", "no leak"})
				t.Errorf("the feedback or the results show the hidden test:\n%s\n%+v", o.Feedback, o.Results)
			}
		})
	}
	settle := func(t *testing.T, label string, uids []int) {
		// A daemon that outlived its job would act now.
		time.Sleep(2 * time.Second)
		if ps := uidProcesses(uids); len(ps) > 0 {
			failures = append(failures, hostileFailure{label, "processes survived", fmt.Sprint(ps), "none"})
			t.Errorf("%s: processes of the pool's uids survived: %v", label, ps)
		}
	}

	// Pass 1: two sandboxes, one job at a time, a control after every three
	// hostile programs. The pool hands out its idle sandboxes in turn, so
	// consecutive jobs alternate between them: the second pass guarantees
	// that each hostile job's successor in its sandbox is a control.
	pool := testPool(t, 2)
	ev := &Evaluator{Runner: pool}
	restarts = func() int64 { return pool.Stats().Restarts }
	uids := pool.UIDs()
	k := 0
	for i, h := range hostiles {
		run(t, ev, "pass1", h)
		if (i+1)%3 == 0 {
			run(t, ev, "pass1", rotation[k%len(rotation)])
			k++
		}
	}
	run(t, ev, "pass1", memControl)
	for _, c := range controls {
		run(t, ev, "pass1", c)
	}
	settle(t, "pass1", uids)
	st := pool.Stats()
	t.Logf("pass 1: %d jobs, %d sandbox restarts, memory cgroup %v", st.Jobs, st.Restarts, st.Cgroup)
	pool.Close()

	// Pass 2: one sandbox, so the job after each hostile one runs in the
	// same sandbox: the probe, and every fourth time another control too.
	pool = testPool(t, 1)
	ev = &Evaluator{Runner: pool}
	uids = pool.UIDs()
	k = 0
	for i, h := range hostiles {
		run(t, ev, "pass2", h)
		run(t, ev, "pass2", probe)
		if (i+1)%4 == 0 {
			run(t, ev, "pass2", rotation[k%len(rotation)])
			k++
		}
	}
	run(t, ev, "pass2", memControl)
	for _, c := range controls {
		run(t, ev, "pass2", c)
	}
	settle(t, "pass2", uids)
	st = pool.Stats()
	t.Logf("pass 2: %d jobs, %d sandbox restarts, memory cgroup %v", st.Jobs, st.Restarts, st.Cgroup)

	for _, p := range hostArtifacts() {
		failures = append(failures, hostileFailure{"host", p, "written on the host", "nothing"})
		t.Errorf("%s was written on the host", p)
		os.RemoveAll(p)
	}
	for _, p := range []string{"/usr/bin/python3", "/usr/bin/bwrap"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("host %s is gone: %v", p, err)
		}
	}
	if len(failures) > 0 {
		var b strings.Builder
		for _, f := range failures {
			fmt.Fprintf(&b, "  %s  %-75s got %s, want %s\n", f.pass, f.name, f.got, f.want)
		}
		t.Logf("%d wrong verdicts or checks (%d hostile programs, %d controls):\n%s", len(failures), len(hostiles), len(controls), b.String())
	}
}
