#: class: objects
#: expect: pass
#: why: 'MBPP-style arguments built from the solution''s class (Pair(5, 24)) in an assert and in a value test; a type as an argument'
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

def max_chain_length(arr, n):
    mcl = [1] * n
    for i in range(1, n):
        for j in range(0, i):
            if arr[i].a > arr[j].b and mcl[i] < mcl[j] + 1:
                mcl[i] = mcl[j] + 1
    return max(mcl)
