#: name: control: range where the assert sorts the result
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/upto","kind":"python-function","prompt":"def upto(n):\n    \"\"\"Return the numbers 1 to n.\"\"\"\n","entry_point":"upto","tests":[{"name":"assert1","assert":"sorted(candidate(3)) == [1, 2, 3]"},{"name":"assert2","assert":"len(upto(2)) == 2"},{"name":"hidden","assert":"sorted(candidate(987654 % 10)) == [1, 2, 3, 4]","hidden":true}],"timeout_ms":3000,"memory_mb":256}
def upto(n):
    return range(1, n + 1)
