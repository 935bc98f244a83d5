#: class: stdio
#: expect: fail
#: why: 'an atexit handler ends the process with status 3'
#: mode: program
#: stdin: "2 3\n"
#: stdout: "5\n"
import atexit, os
atexit.register(lambda: os._exit(3))
a, b = map(int, input().split())
print(a + b)
