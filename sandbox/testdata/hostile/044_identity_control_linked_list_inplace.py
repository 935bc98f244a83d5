#: class: identity
#: expect: pass
#: why: 'a LeetCode-style in-place linked-list task whose node class the task defines: the program relinks the judge''s own nodes'
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
#:           head = build([1, 2, 3])
#:           tail = head.next.next
#:           new = c(head)
#:           assert new is tail
#:           assert values(new) == [3, 2, 1]
#:           assert head.next is None
#:     hidden: true
class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next

def reverse(head):
    prev = None
    while head is not None:
        head.next, prev, head = prev, head, head.next
    return prev
