#: class: objects
#: expect: pass
#: why: 'two answers that are instances of the program''s class compare structurally in trusted code'
#: entry: make
#: tests:
#:   - assert: "make(1) == make(1) and make(1) != make(2)"
#:     hidden: true
class Box:
    __slots__ = ("v",)
    def __init__(self, v):
        self.v = v

def make(v):
    return Box(v)
