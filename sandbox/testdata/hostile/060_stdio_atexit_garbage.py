#: class: stdio
#: expect: fail
#: why: 'prints the right answer, then an atexit handler prints garbage, as CPython would at shutdown'
#: mode: program
#: stdin: "2 3\n"
#: stdout: "5\n"
import atexit
atexit.register(lambda: print("garbage"))
a, b = map(int, input().split())
print(a + b)
