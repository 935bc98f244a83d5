#: name: [4] records assert arguments: a hidden input before a visible one fails
#: status: passed
#: task: {"schema_version":2,"task_id":"hostile/f-assert","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"assert1","assert":"candidate(1) == 2"},{"name":"assert2","assert":"f(2) == 3"},{"name":"hidden","assert":"candidate(987654) == 987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
SEEN = []


def f(x):
    if any(v > 100 for v in SEEN):
        return -1
    SEEN.append(x)
    return x + 1
