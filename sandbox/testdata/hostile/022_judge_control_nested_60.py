#: class: judge
#: expect: pass
#: why: 'a legal 60-deep nested answer, compared with an expected value the task builds'
#: entry: nest
#: tests:
#:   - check: |
#:       def check(c):
#:           x = 0
#:           for _ in range(60):
#:               x = [x]
#:           assert c(60) == x
#:   - value: ["2", "[[0]]"]
#:     hidden: true
def nest(n):
    x = 0
    for _ in range(n):
        x = [x]
    return x
