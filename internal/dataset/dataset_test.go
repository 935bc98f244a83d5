package dataset

import (
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	a := []Row{
		{"node_id": "n1", "tree_id": "t", "reward": 1.0, "generated_at": "x", "batch_id": "b1"},
		{"node_id": "n2", "tree_id": "t", "reward": 0.0, "loss_weights": []any{1.0, 1.0}},
	}
	cases := []struct {
		name string
		b    []Row
		want []string
	}{
		{"identical but for volatile columns", []Row{
			{"node_id": "n2", "tree_id": "t", "reward": 0.0, "loss_weights": []any{1.0, 1.0}},
			{"node_id": "n1", "tree_id": "t", "reward": 1.0, "generated_at": "y", "batch_id": "b9"},
		}, nil},
		{"changed value", []Row{
			{"node_id": "n1", "tree_id": "t", "reward": 1.0},
			{"node_id": "n2", "tree_id": "t", "reward": 0.0, "loss_weights": []any{1.0, 0.0}},
		}, []string{"node n2: loss_weights"}},
		{"missing row", []Row{{"node_id": "n1", "tree_id": "t", "reward": 1.0}}, []string{"node n2: present vs missing"}},
		{"duplicated row", []Row{
			{"node_id": "n1", "tree_id": "t", "reward": 1.0}, {"node_id": "n1", "tree_id": "t", "reward": 1.0},
			{"node_id": "n2", "tree_id": "t", "reward": 0.0, "loss_weights": []any{1.0, 1.0}},
		}, []string{"node n1: 1 copies vs 2 copies"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			diffs, err := Compare(a, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) != len(tc.want) {
				t.Fatalf("diffs = %v, want %v", diffs, tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(diffs[i].String(), w) {
					t.Errorf("diff %d = %q, want prefix %q", i, diffs[i], w)
				}
			}
		})
	}
	if _, err := Compare([]Row{{"reward": 1.0}}, nil); err == nil {
		t.Error("a row without node_id must be an error")
	}
}

func TestVolatile(t *testing.T) {
	for col, want := range map[string]bool{"generated_at": true, "batch_id": true, "source_offset": true, "reward": false, "node_id": false} {
		if Volatile(col) != want {
			t.Errorf("Volatile(%q) = %v", col, !want)
		}
	}
}
