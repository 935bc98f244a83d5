package credit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/topics"
)

func jsonLines(t *testing.T, samples []*topics.Sample) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, s := range samples {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func readLines(t *testing.T, b []byte) []OfflineLine {
	t.Helper()
	var out []OfflineLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l OfflineLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

func TestOfflineMatchesTheCoreOnInterleavedTreesWithDuplicates(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	cfg := cfgWith(func(c *Config) { c.Strategy = StrategyMERS; c.Z = ZOnePlusGamma; c.Gamma = 0.8; c.IntrapK = 3 })
	var all []*topics.Sample
	want := map[string]topics.CreditedTree{}
	for i := range 40 {
		sp := genSpec{maxTurns: 3, minG: 2, maxG: 5, expand: 0.5, masked: 0.1, outStats: 0.5, discrete: true}
		s := genTree(rng, fmt.Sprintf("run/task/%d", i), sp)
		ct, _ := Credit(mustTree(s), cfg)
		want[ct.TreeID] = ct
		all = append(all, s...)
	}
	dups := len(all) / 5
	for range dups {
		all = append(all, all[rng.IntN(len(all))])
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })

	var out, log bytes.Buffer
	rep, err := Offline(context.Background(), bytes.NewReader(jsonLines(t, all)), &out, OfflineOptions{Credit: cfg, Incomplete: IncompleteDrop, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Trees != 40 || rep.Duplicates != dups || rep.IncompleteTrees != 0 || log.Len() != 0 {
		t.Fatalf("report %+v, log %q", rep, log.String())
	}
	got := map[string][]topics.CreditedSample{}
	for _, l := range readLines(t, out.Bytes()) {
		if !reflect.DeepEqual(l.Config, cfg) || l.Incomplete {
			t.Fatalf("line config %+v incomplete=%v", l.Config, l.Incomplete)
		}
		got[l.TreeID] = append(got[l.TreeID], l.CreditedSample)
	}
	total := 0
	for id, ct := range want {
		total += len(ct.Samples)
		// JSON drops the monotonic clock and nil-vs-empty; compare encodings.
		a, _ := json.Marshal(ct.Samples)
		b, _ := json.Marshal(got[id])
		if !bytes.Equal(a, b) {
			t.Fatalf("tree %s differs from the core:\n core %s\n file %s", id, a, b)
		}
	}
	if rep.Written != total {
		t.Fatalf("written %d, want %d", rep.Written, total)
	}
}

func TestOfflineAcceptsMinimalLines(t *testing.T) {
	root := topics.RootID("t1")
	a := topics.NodeID("t1", root, 0)
	lines := []string{
		fmt.Sprintf(`{"tree_id":"t1","node_id":"%s","parent_id":"","group_id":"%s","group_size":2,"turn":1,"max_turns":2,"reward":0,"route":"train","in_group_stats":true,"children_requested":1}`, a, root),
		fmt.Sprintf(`{"tree_id":"t1","node_id":"b","parent_id":"","group_id":"%s","group_size":2,"turn":1,"max_turns":2,"reward":0.5,"route":"train","in_group_stats":true,"children_requested":0}`, root),
		``,
		fmt.Sprintf(`{"tree_id":"t1","node_id":"c","parent_id":"%s","group_id":"%s","group_size":1,"turn":2,"max_turns":2,"reward":1,"route":"train","in_group_stats":true,"children_requested":0}`, a, a),
	}
	var out bytes.Buffer
	rep, err := Offline(context.Background(), strings.NewReader(strings.Join(lines, "\n")), &out, OfflineOptions{Credit: cfgWith(nil), Incomplete: IncompleteDrop})
	if err != nil {
		t.Fatal(err)
	}
	got := readLines(t, out.Bytes())
	if rep.Trees != 1 || len(got) != 3 {
		t.Fatalf("report %+v, %d lines", rep, len(got))
	}
	// MARS: a gets its child's 1; root group {1, .5}.
	byID := map[string]OfflineLine{}
	for _, l := range got {
		byID[l.NodeID] = l
	}
	if byID[a].CreditedReward != 1 || byID[a].Advantage <= 0 || byID["b"].Advantage >= 0 || byID["c"].Advantage != 0 {
		t.Fatalf("credit %+v", got)
	}
	if got[0].SchemaVersion != topics.SchemaVersion {
		t.Fatalf("schema_version %d", got[0].SchemaVersion)
	}
}

func TestOfflineRejectsBadLinesWithTheirNumber(t *testing.T) {
	good := build("t", 1, []nb{{r: 1}, {r: 0}})
	gl := strings.TrimSpace(string(jsonLines(t, good[:1])))
	tests := []struct {
		name string
		line string
		want string
	}{
		{"not json", `{"tree_id":`, "not a JSON sample"},
		{"missing fields", `{"tree_id":"t","node_id":"x","parent_id":""}`, "missing group_id, group_size, turn, max_turns, reward, route, in_group_stats, children_requested"},
		{"null is missing", strings.Replace(gl, `"in_group_stats":true`, `"in_group_stats":null`, 1), "missing in_group_stats"},
		{"contradicts the tree", strings.Replace(strings.Replace(gl, `"turn":1`, `"turn":2`, 1), good[0].NodeID, "other", 1), "turn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := gl + "\n\n" + tc.line + "\n"
			_, err := Offline(context.Background(), strings.NewReader(in), &bytes.Buffer{}, OfflineOptions{Credit: cfgWith(nil), Incomplete: IncompleteDrop})
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want line 3 with %q", err, tc.want)
			}
		})
	}
}

func TestOfflineIncompleteTrees(t *testing.T) {
	full := build("ok", 2, []nb{{r: 0, kids: []nb{{r: 1}}}, {r: 0.5}})
	broken := build("stuck", 2, []nb{{r: 0, kids: []nb{{r: 1}, {r: 0}}}, {r: 0.5}})
	in := jsonLines(t, append(append([]*topics.Sample{}, full...), broken[:3]...)) // stuck lacks one child
	for _, mode := range []string{IncompleteDrop, IncompleteFlag} {
		t.Run(mode, func(t *testing.T) {
			var out, log bytes.Buffer
			rep, err := Offline(context.Background(), bytes.NewReader(in), &out, OfflineOptions{Credit: cfgWith(nil), Incomplete: mode, Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			lines := readLines(t, out.Bytes())
			if rep.IncompleteTrees != 1 || rep.Trees != 1 || !strings.Contains(log.String(), "tree stuck incomplete") || !strings.Contains(log.String(), "1 of 2 members") {
				t.Fatalf("report %+v log %q", rep, log.String())
			}
			flagged := 0
			for _, l := range lines {
				if l.Incomplete {
					flagged++
					if l.TreeID != "stuck" {
						t.Fatalf("complete tree flagged")
					}
				}
			}
			wantLines, wantFlagged := 3, 0
			if mode == IncompleteFlag {
				wantLines, wantFlagged = 6, 3
			}
			if len(lines) != wantLines || flagged != wantFlagged {
				t.Fatalf("%d lines, %d flagged; want %d, %d", len(lines), flagged, wantLines, wantFlagged)
			}
		})
	}
}
