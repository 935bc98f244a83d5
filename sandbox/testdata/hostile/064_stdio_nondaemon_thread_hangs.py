#: class: stdio
#: expect: fail
#: why: 'prints the answer, then leaves a non-daemon thread that never ends: CPython hangs at shutdown, so this is the wall limit''s'
#: mode: program
#: wall_ms: 1500
#: stdin: "2 3\n"
#: stdout: "5\n"
import threading, time
def spin():
    while True:
        time.sleep(0.05)
threading.Thread(target=spin).start()
a, b = map(int, input().split())
print(a + b)
