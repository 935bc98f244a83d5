#: class: stdio
#: expect: pass
#: why: 'control: the answer is printed by an atexit handler and a finalizer, as CPython runs them'
#: mode: program
#: stdin: "2 3\n"
#: stdout: "5\ndone\n"
import atexit
class Last:
    def __del__(self):
        print("done")
a, b = map(int, input().split())
atexit.register(lambda: print(a + b))
keep = Last()
