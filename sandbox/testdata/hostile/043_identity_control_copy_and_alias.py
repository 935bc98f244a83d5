#: class: identity
#: expect: pass
#: why: 'control: a real copy is not the input; an aliased structure keeps its aliases; dict and set mutations are seen'
#: entry: f
#: tests:
#:   - check: |
#:       def check(c):
#:           xs = [2, 1]
#:           ys = c("copy", xs)
#:           assert ys == [1, 2] and ys is not xs and xs == [2, 1]
#:           a = [1]
#:           r = c("self", a)
#:           assert r is a and a[-1] is a
#:           d = {"k": 1}
#:           assert c("dict", d) is None and d == {"k": 2, "new": True}
#:           s = {1}
#:           c("set", s)
#:           assert s == {1, 2}
#:           pair = [[0], [0]]
#:           inner = pair[0]
#:           out = c("pick", pair)
#:           assert out is inner
#:     hidden: true
def f(op, x):
    if op == "copy":
        return sorted(x)
    if op == "self":
        x.append(x)
        return x
    if op == "dict":
        x["k"] += 1
        x["new"] = True
        return None
    if op == "set":
        x.add(2)
        return None
    if op == "pick":
        return x[0]
