#: class: gone
#: expect: pass
#: why: 'control: the same check, an honest program'
#: entry: f
#: tests:
#:   - value: ["1", "2"]
#:   - check: |
#:       def check(c):
#:           for x in (2, 3, 4):
#:               try:
#:                   assert c(x) == x + 1
#:               except:
#:                   pass
#:     hidden: true
def f(x):
    return x + 1
