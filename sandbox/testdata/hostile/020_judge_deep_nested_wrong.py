#: class: judge
#: expect: fail
#: why: 'a 180-deep nested list as a wrong answer: the judge decodes it on its own allocator, answers "wrong", and the next honest job is not touched'
#: entry: nest
#: tests:
#:   - value: ["3", "[[[0]]]"]
#:   - value: ["1", "[0]"]
#:     hidden: true
def nest(n):
    x = []
    for _ in range(180):
        x = [x]
    return x
