import unittest

from todo import Item, Store


class StoreTest(unittest.TestCase):
    def test_pending_orders_by_priority_then_insertion(self):
        s = Store()
        s.add("write report", 2)
        s.add("pay rent", 1)
        s.add("water plants", 3)
        s.add("call mum", 1)
        s.complete(2)
        self.assertEqual([n for n, _ in s.pending()], [4, 1, 3])

    def test_round_trip(self):
        s = Store([Item("a\tb", 3, True), Item("plain")])
        again = Store.loads(s.dumps())
        self.assertEqual(again.items, s.items)

    def test_rejects_bad_input(self):
        s = Store()
        with self.assertRaises(ValueError):
            s.add("   ")
        with self.assertRaises(ValueError):
            s.add("x", 7)
        with self.assertRaises(IndexError):
            s.complete(1)


if __name__ == "__main__":
    unittest.main()
