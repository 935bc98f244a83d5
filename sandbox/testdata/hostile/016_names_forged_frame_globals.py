#: class: names
#: expect: fail
#: why: 'the program rewrites builtins and the frames it can reach (abs, sorted, its own module globals), and plants a "loaded" frame claiming modules; the judge''s builtins and names are its own'
#: entry: dist
#: tests:
#:   - assert: "abs(dist(1, 4) - 3) < 1e-9"
#:   - assert: "sorted([dist(0, 2), dist(0, 1)]) == [1, 2]"
#:   - assert: "abs(dist(2, 9) - 7) < 1e-9"
#:     hidden: true
import builtins, sys, os
builtins.abs = lambda x: 0
builtins.sorted = lambda xs: [1, 2]
try:
    os.write(3, b'\x00\x00\x00\x4b{"loaded": true, "modules": {"abs": "builtins"}, "imports": {"abs": ["math", "fabs"]}}')
except OSError:
    pass
f = sys._getframe()
while f is not None:
    f.f_globals["abs"] = builtins.abs
    f = f.f_back

def dist(a, b):
    return 0
