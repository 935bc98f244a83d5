#: class: identity
#: expect: fail
#: why: 'builds a new reversed list instead of relinking, and claims equality through its own __eq__'
#: entry: reverse
#: helpers: |
#:   class ListNode:
#:       def __init__(self, val=0, next=None):
#:           self.val = val
#:           self.next = next
#:   def build(xs):
#:       head = None
#:       for x in reversed(xs):
#:           head = ListNode(x, head)
#:       return head
#: tests:
#:   - check: |
#:       def check(c):
#:           head = build([1, 2, 3])
#:           tail = head.next.next
#:           new = c(head)
#:           assert new is tail
#:           assert head.next is None
#:     hidden: true
class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next
    def __eq__(self, other):
        return True

def reverse(head):
    vals = []
    while head is not None:
        vals.append(head.val)
        head = head.next
    new = None
    for v in vals:
        new = ListNode(v, new)
    return new
