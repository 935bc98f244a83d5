#: class: gone
#: expect: pass
#: why: 'control'
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
def parse(s):
    if not s.isdigit():
        raise ValueError(s)
    return int(s)
