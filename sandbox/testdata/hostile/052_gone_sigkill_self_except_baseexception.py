#: class: gone
#: expect: fail
#: why: 'kills itself with SIGKILL, and answers garbage bytes on the channel first; "except BaseException" in the check swallows what it can'
#: entry: parse
#: tests:
#:   - check: |
#:       def check(c):
#:           try:
#:               c("bad")
#:           except BaseException:
#:               pass
#:           else:
#:               assert False
#:           assert c("7") == 7
#:     hidden: true
import os, signal
def parse(s):
    if not s.isdigit():
        try:
            os.write(3, b"\x00\x00\x00\x05{bad}")
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)
    return int(s)
