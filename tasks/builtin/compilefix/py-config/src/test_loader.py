import unittest

from settings.loader import load, parse_file


class LoaderTest(unittest.TestCase):
    def test_defaults(self):
        s = load(None, environ={})
        self.assertEqual(s["port"], 8000)
        self.assertIs(s["debug"], False)

    def test_file_then_environment(self):
        values = parse_file("port = 9000  # dev\n\ndebug=yes\n")
        self.assertEqual(values, {"port": 9000, "debug": True})
        s = load(None, environ={"APP_WORKERS": "8", "APP_TIMEOUT_SECONDS": "2.5"})
        self.assertEqual((s["workers"], s["timeout_seconds"]), (8, 2.5))

    def test_rejects_unknown_and_bad_values(self):
        with self.assertRaises(ValueError):
            parse_file("colour = blue\n")
        with self.assertRaises(ValueError):
            load(None, environ={"APP_DEBUG": "maybe"})
        with self.assertRaises(ValueError):
            load(None, environ={"APP_LOG_LEVEL": "chatty"})


if __name__ == "__main__":
    unittest.main()
