#: class: stdio
#: expect: fail
#: why: 'a module global whose finalizer prints garbage at interpreter shutdown'
#: mode: program
#: stdin: "2 3\n"
#: stdout: "5\n"
class Noisy:
    def __del__(self):
        print("extra line")
noisy = Noisy()
a, b = map(int, input().split())
print(a + b)
