#: class: stdio
#: expect: pass
#: why: 'control: the main module returns at once; a non-daemon thread prints after a pause and is joined at shutdown'
#: mode: program
#: stdin: "2 3\n"
#: stdout: "5\n"
import threading, time, sys
data = sys.stdin.read().split()
def late():
    time.sleep(0.2)
    print(int(data[0]) + int(data[1]))
threading.Thread(target=late).start()
