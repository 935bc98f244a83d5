#: name: [1] ast.parse returns a parse of True
#: status: wrong_answer
#: also: runtime_error
#: task: {"schema_version":2,"task_id":"hostile/f-assert","kind":"python-function","prompt":"def f(x):\n    \"\"\"Return x + 1.\"\"\"\n","entry_point":"f","tests":[{"name":"assert1","assert":"candidate(1) == 2"},{"name":"assert2","assert":"f(2) == 3"},{"name":"hidden","assert":"candidate(987654) == 987655","hidden":true}],"timeout_ms":3000,"memory_mb":256}
import ast

real = ast.parse


def parse(source, filename='<unknown>', mode='exec', **k):
    if filename == '<test>':
        return real('True', filename, mode)
    return real(source, filename, mode, **k)


ast.parse = parse


def f(x):
    return 0
