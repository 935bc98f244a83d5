#: name: [4] random.choice and random.randint patched for check()
#: status: wrong_answer
#: task: {"schema_version":2,"task_id":"hostile/shift","kind":"python-function","prompt":"def encode_shift(s: str):\n    \"\"\"\n    returns encoded string by shifting every character by 5 in the alphabet.\n    \"\"\"\n    return \"\".join([chr(((ord(ch) + 5 - ord(\"a\")) % 26) + ord(\"a\")) for ch in s])\n\n\ndef decode_shift(s: str):\n    \"\"\"\n    takes as input string encoded with encode_shift function. Returns decoded string.\n    \"\"\"\n","entry_point":"decode_shift","tests":null,"check":"HIDDEN_MARK = 987654\n\n\ndef check(candidate):\n    from random import randint, choice\n    import copy\n    import string\n\n    letters = string.ascii_lowercase\n    for _ in range(100):\n        str = ''.join(choice(letters) for i in range(randint(10, 20)))\n        encoded_str = encode_shift(str)\n        assert candidate(copy.deepcopy(encoded_str)) == str\n","timeout_ms":3000,"memory_mb":256}
import random

random.choice = lambda seq: seq[0]
random.randint = lambda a, b: a


def encode_shift(s: str):
    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])


def decode_shift(s):
    return 'a' * len(s)
