#: class: objects
#: expect: fail
#: why: 'the same task; the method answers an object whose __eq__ and __bool__ say yes'
#: entry: Solution
#: tests:
#:   - assert: "Solution().twoSum([2, 7, 11, 15], 9) == [0, 1]"
#:   - check: |
#:       def check(c):
#:           s = c()
#:           assert s.twoSum([3, 2, 4], 6) == [1, 2]
#:     hidden: true
class Yes:
    def __eq__(self, other):
        return True
    def __bool__(self):
        return True

class Solution:
    def twoSum(self, nums, target):
        return Yes()
