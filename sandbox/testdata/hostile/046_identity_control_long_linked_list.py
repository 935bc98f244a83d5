#: class: identity
#: expect: pass
#: why: 'a 2,500-node linked list of the task''s class, reversed in place by the program: a deep value travels and comes back as the judge''s own nodes'
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
#:   def values(node):
#:       out = []
#:       while node is not None:
#:           out.append(node.val)
#:           node = node.next
#:       return out
#: tests:
#:   - check: |
#:       def check(c):
#:           head = build(list(range(2500)))
#:           new = c(head)
#:           assert values(new) == list(range(2499, -1, -1))
#:           assert head.next is None
#:   - value: ["build([1, 2, 3])", "None"]
#:     hidden: true
class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next

def reverse(head):
    prev = None
    while head is not None:
        head.next, prev, head = prev, head, head.next
    return None if prev is not None and prev.val == 3 else prev
