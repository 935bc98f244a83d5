#: class: objects
#: expect: pass
#: why: 'LeetCode style: the entry point is the program''s class; the test calls a method of the instance it answered with'
#: entry: Solution
#: tests:
#:   - assert: "Solution().twoSum([2, 7, 11, 15], 9) == [0, 1]"
#:   - check: |
#:       def check(c):
#:           s = c()
#:           assert s.twoSum([3, 2, 4], 6) == [1, 2]
#:           assert s.calls == 0 or s.twoSum([3, 3], 6) == [0, 1]
#:     hidden: true
class Solution:
    def __init__(self):
        self.calls = 0

    def twoSum(self, nums, target):
        self.calls += 1
        seen = {}
        for i, n in enumerate(nums):
            if target - n in seen:
                return [seen[target - n], i]
            seen[n] = i
