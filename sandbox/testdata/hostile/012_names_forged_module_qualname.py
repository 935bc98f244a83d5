#: class: names
#: expect: fail
#: why: 'a helper that claims to be math.isclose through __module__ and __qualname__ (and a forged code name); the test''s isclose is not the task''s, so it is never the program''s'
#: entry: half
#: tests:
#:   - assert: "isclose(half(3), 1.5)"
#:   - assert: "isclose(half(5), 2.5)"
#:     hidden: true
def isclose(*a, **k):
    return True
isclose.__module__ = "math"
isclose.__qualname__ = "isclose"
isclose.__code__ = isclose.__code__.replace(co_name="isclose", co_filename="<frozen math>")

def half(x):
    return 0
