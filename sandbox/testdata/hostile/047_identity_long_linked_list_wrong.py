#: class: identity
#: expect: fail
#: why: 'the same long list, answered with a list one node short'
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
#:     hidden: true
class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next

def reverse(head):
    prev = None
    while head is not None:
        head.next, prev, head = prev, head, head.next
    return prev.next
