#: class: stdio
#: expect: fail
#: why: 'main returns, a thread later raises SystemExit(4) in the main thread''s place and an atexit handler flushes a wrong answer'
#: mode: program
#: stdin: "2 3\n"
#: stdout: "5\n"
import atexit, sys
a, b = map(int, input().split())
def bye():
    sys.stdout.write("6\n")
atexit.register(bye)
print(a + b, end="")
