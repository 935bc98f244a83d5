#: class: objects
#: expect: pass
#: why: 'MBPP test_setup_code builds a tree from the solution''s own Node class; the test calls the entry point on it'
#: entry: max_height
#: setup: |
#:   root = Node(1)
#:   root.left = Node(2)
#:   root.right = Node(3)
#:   root.left.left = Node(4)
#:   root.left.left.left = Node(5)
#:   root1 = Node(7)
#: tests:
#:   - assert: "max_height(root) == 4"
#:   - assert: "max_height(root1) == 1"
#:     hidden: true
class Node:
    def __init__(self, data):
        self.data = data
        self.left = None
        self.right = None

def max_height(node):
    if node is None:
        return 0
    return 1 + max(max_height(node.left), max_height(node.right))
