#: class: gone
#: expect: pass
#: why: 'control: the program raises, which the check expects'
#: entry: parse
#: tests:
#:   - value: ["'12'", "12"]
#:   - check: |
#:       def check(c):
#:           try:
#:               c("x")
#:           except:
#:               pass
#:           else:
#:               raise AssertionError("no error for bad input")
#:     hidden: true
def parse(s):
    return int(s)
