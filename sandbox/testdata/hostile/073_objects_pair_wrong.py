#: class: objects
#: expect: fail
#: why: 'the same arguments, a wrong answer whose class claims equality with everything'
#: entry: max_chain_length
#: tests:
#:   - assert: "max_chain_length([Pair(5, 24), Pair(15, 25), Pair(27, 40), Pair(50, 60)], 4) == 3"
#:   - value: ["[Pair(1, 2), Pair(3, 4), Pair(5, 6), Pair(7, 8)], 4", "4"]
#:   - value: ["[Pair(19, 10), Pair(11, 12), Pair(13, 14), Pair(15, 16), Pair(31, 54)], 5", "5"]
#:     hidden: true
class Pair(object):
    def __init__(self, a, b):
        self.a = a
        self.b = b
    def __eq__(self, other):
        return True
    def __bool__(self):
        return True

def max_chain_length(arr, n):
    return Pair(0, 0)
