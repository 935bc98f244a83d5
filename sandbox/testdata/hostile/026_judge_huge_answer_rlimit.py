#: class: judge
#: expect: fail
#: why: 'an answer that expands in the judge (a long string repeated in a long list); the judge''s own limit says MemoryError, the next job is unaffected'
#: entry: f
#: memory_mb: 512
#: tests:
#:   - value: ["1", "1"]
#:     hidden: true
def f(x):
    return ["x" * 4000] * 60000
