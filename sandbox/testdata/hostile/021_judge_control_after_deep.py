#: class: judge
#: expect: pass
#: why: 'the honest job right after a deep answer'
#: entry: nest
#: tests:
#:   - value: ["3", "[[[0]]]"]
#:   - value: ["1", "[0]"]
#:     hidden: true
def nest(n):
    x = 0
    for _ in range(n):
        x = [x]
    return x
