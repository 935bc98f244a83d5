package inspect

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/murphy-rl/murphy/internal/inspect/chromiumtest"
	"github.com/murphy-rl/murphy/topics"
)

const treeID = "run-7/task-a/0"

// mk builds a sample of treeID with a deterministic node id (topics.NodeID)
// under parent ("" = root group).
func mk(parent string, turn, index, groupSize, children int, reward, credited float64, status string) Sample {
	base := parent
	gid := parent
	if parent == "" {
		base = topics.RootID(treeID)
		gid = base
	}
	route := topics.RouteTrain
	return Sample{TreeID: treeID, TaskID: "task-a", NodeID: topics.NodeID(treeID, base, index), ParentID: parent, GroupID: gid,
		Turn: turn, MaxTurns: 3, GroupSize: groupSize, SampleIndex: index, ChildrenRequested: children,
		Reward: reward, CreditedReward: credited, Route: route, FailureCause: status, Status: status,
		ResponseText: "def f():\n    return " + status + "\n", PromptText: "task"}
}

func id(parent string, index int) string {
	if parent == "" {
		return topics.NodeID(treeID, topics.RootID(treeID), index)
	}
	return topics.NodeID(treeID, parent, index)
}

// handTree: a root group of 4 with member #1 pruned; #0 failed and was
// refined into 3 children of which #1 was pruned; #2 failed and asked for 2
// children, both pruned; #3 passed. The pruned #1 of the root group had 3
// children of its own, so 1+1+2+3 = 7 nodes were pruned, 3 of them invisible.
func handTree() []Sample {
	r0 := id("", 0)
	ss := []Sample{
		mk("", 1, 0, 4, 3, 0, 1, topics.StatusWrongAnswer),
		mk("", 1, 2, 4, 2, 0.5, 0.5, topics.StatusWrongAnswer),
		mk("", 1, 3, 4, 0, 1, 1, topics.StatusPassed),
		mk(r0, 2, 0, 3, 0, 1, 1, topics.StatusPassed),
		mk(r0, 2, 2, 3, 0, 0, 0, topics.StatusRuntimeError),
	}
	for i := range ss {
		ss[i].PrunedNodes = 7
	}
	return ss
}

func build(t *testing.T, in *Input) *Page {
	t.Helper()
	p, err := Build(in, Options{Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func nodeByID(tr *Tree, id string) *Node {
	for _, n := range tr.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

func TestBuildNodesAndPrunedPlaceholders(t *testing.T) {
	p := build(t, &Input{Source: "hand", Samples: handTree(), Configs: []topics.CreditConfig{{Strategy: "mars", IntrapK: 2}}})
	if p.Nodes != 5 || len(p.Trees) != 1 || p.Ghosts != 0 {
		t.Fatalf("nodes %d trees %d ghosts %d, want 5 1 0", p.Nodes, len(p.Trees), p.Ghosts)
	}
	tr := p.Trees[0]
	if tr.Run != "run-7" || tr.TaskID != "task-a" || !tr.Solved || tr.PrunedNodes != 7 {
		t.Errorf("tree %+v", tr)
	}
	type want struct {
		up      string
		count   int
		of      int
		indices []int
	}
	wants := []want{{"", 1, 4, []int{1}}, {id("", 0), 1, 3, []int{1}}, {id("", 2), 2, 2, []int{0, 1}}}
	if len(tr.Placeholders) != len(wants) {
		t.Fatalf("placeholders %+v", tr.Placeholders)
	}
	shown := 0
	for _, w := range wants {
		i := slices.IndexFunc(tr.Placeholders, func(ph *Placeholder) bool { return ph.Up == w.up })
		if i < 0 {
			t.Fatalf("no placeholder under %q", w.up)
		}
		ph := tr.Placeholders[i]
		if ph.Count != w.count || ph.Of != w.of || !slices.Equal(ph.Indices, w.indices) || ph.Reason != "pruned (INTRAP/INTERP)" {
			t.Errorf("placeholder under %q: %+v, want %+v", w.up, ph, w)
		}
		// The ids the pruned members would have had (DESIGN §3).
		for j, ix := range ph.Indices {
			if ph.IDs[j] != id(w.up, ix) {
				t.Errorf("placeholder under %q: id %d = %s, want %s", w.up, ix, ph.IDs[j], id(w.up, ix))
			}
		}
		shown += ph.Count
		wantTurn := 1
		if w.up != "" {
			wantTurn = 2
		}
		if ph.Depth != ph.Turn || ph.Turn != wantTurn {
			t.Errorf("placeholder under %q at turn %d depth %d", w.up, ph.Turn, ph.Depth)
		}
	}
	if tr.HiddenPruned != 7-shown {
		t.Errorf("hidden pruned %d, want %d", tr.HiddenPruned, 7-shown)
	}
	// Layout: leaves left to right by sample index, the placeholder where
	// its member would be; parents over the middle of their children.
	x := func(id string) float64 { return nodeByID(tr, id).X }
	r0 := id("", 0)
	// Slots: r0's children #0, placeholder #1, #2; the root placeholder;
	// r2's placeholder; r3.
	if x(id(r0, 0)) != 0 || x(id(r0, 2)) != 2 || x(r0) != 1 || x(id("", 2)) != 4 || x(id("", 3)) != 5 {
		t.Errorf("layout: %v %v %v %v %v", x(id(r0, 0)), x(id(r0, 2)), x(r0), x(id("", 2)), x(id("", 3)))
	}
	if tr.Width != 6 || tr.Depth != 2 {
		t.Errorf("width %d depth %d, want 6 2", tr.Width, tr.Depth)
	}
	// Credit flow: r0 failed, got credit 1 from its passing child.
	n := nodeByID(tr, r0)
	if !n.Failed || !n.Lifted || !n.SolvedBelow || n.Descendants != 2 {
		t.Errorf("r0 %+v", n)
	}
	if m := nodeByID(tr, id("", 2)); !m.Failed || m.Lifted || m.SolvedBelow {
		t.Errorf("r2 %+v", m)
	}
	// Diffs: to the parent's response, none for the root group.
	if d := nodeByID(tr, id(r0, 0)).Diff; len(d) == 0 || d[0].Op != "@" {
		t.Errorf("child diff %v", d)
	}
	if d := nodeByID(tr, r0).Diff; d != nil {
		t.Errorf("root member has a diff %v", d)
	}
}

func TestBuildCompleteTreeHasNoPlaceholders(t *testing.T) {
	ss := []Sample{mk("", 1, 0, 2, 0, 1, 1, topics.StatusPassed), mk("", 1, 1, 2, 0, 0, 0, topics.StatusWrongAnswer)}
	p := build(t, &Input{Samples: append(ss, ss[0])}) // plus a duplicate row
	if p.Nodes != 2 || p.Placeholders != 0 || p.Duplicates != 1 || p.Trees[0].HiddenPruned != 0 {
		t.Errorf("nodes %d placeholders %d duplicates %d hidden %d", p.Nodes, p.Placeholders, p.Duplicates, p.Trees[0].HiddenPruned)
	}
}

// With drop_zero_signal a zero-signal group leaves the output while its
// members' refinement groups stay: the missing parent is drawn as a ghost in
// its member's place, the rest of its group as a placeholder.
func TestBuildGhostParentOfDroppedGroup(t *testing.T) {
	r1 := id("", 1)
	ss := []Sample{
		mk(r1, 2, 0, 2, 0, 1, 1, topics.StatusPassed),
		mk(r1, 2, 1, 2, 0, 0, 0, topics.StatusWrongAnswer),
		mk("", 1, 0, 3, 0, 0, 0, topics.StatusWrongAnswer), // keeps the root group known (size 3)
	}
	p := build(t, &Input{Samples: ss, Configs: []topics.CreditConfig{{Strategy: "mars", DropZeroSignal: true}}})
	tr := p.Trees[0]
	if p.Nodes != 3 || p.Ghosts != 1 {
		t.Fatalf("nodes %d ghosts %d", p.Nodes, p.Ghosts)
	}
	g := nodeByID(tr, r1)
	if g == nil || !g.Ghost || g.Up != "" || g.Index != 1 || g.Turn != 1 || g.Descendants != 2 || !g.SolvedBelow {
		t.Fatalf("ghost %+v", g)
	}
	if len(tr.Placeholders) != 1 || tr.Placeholders[0].Count != 1 || !slices.Equal(tr.Placeholders[0].Indices, []int{2}) ||
		tr.Placeholders[0].Reason != "dropped (zero-signal group)" {
		t.Errorf("placeholders %+v", tr.Placeholders)
	}
	for _, n := range tr.Nodes {
		if n.ParentID == r1 && (n.Up != r1 || n.Depth != 2 || n.Diff != nil) {
			t.Errorf("child of the ghost: %+v", n)
		}
	}
}

// A cycle in the parent links (malformed input) must not hang the layout
// or lose a node.
func TestBuildDetachedCycle(t *testing.T) {
	a := Sample{TreeID: "t", NodeID: "a", ParentID: "b", Turn: 2, Route: "train"}
	b := Sample{TreeID: "t", NodeID: "b", ParentID: "a", Turn: 2, Route: "train"}
	p := build(t, &Input{Samples: []Sample{a, b}})
	if p.Nodes != 2 {
		t.Fatalf("nodes %d", p.Nodes)
	}
	if n := nodeByID(p.Trees[0], "a"); !n.Detached {
		t.Errorf("a not detached: %+v", n)
	}
}

func TestHistogramBins(t *testing.T) {
	e := Edges(0, 1, 10)
	if len(e) != 11 || e[0] != 0 || e[10] != 1 || math.Abs(e[3]-0.3) > 1e-12 {
		t.Fatalf("edges %v", e)
	}
	for x, want := range map[float64]int{0: 0, 0.0999: 0, 0.1: 1, 0.55: 5, 0.95: 9, 1: 9, -0.01: -1, 1.01: -1, math.NaN(): -1} {
		if got := Bin(x, e); got != want {
			t.Errorf("Bin(%v) = %d, want %d", x, got, want)
		}
	}
	if h := Histogram([]float64{0, 0, 0.5, 1, 1, 1, 2}, e); !slices.Equal(h, []int{2, 0, 0, 0, 0, 1, 0, 0, 0, 3}) {
		t.Errorf("histogram %v", h)
	}
	if e := Edges(0, 0, 0); len(e) != 2 || e[1] != 1 {
		t.Errorf("degenerate edges %v", e)
	}
}

func TestRunStatsPerTurn(t *testing.T) {
	ss := handTree()
	// MERS-like credit above 1 widens the shared bins.
	other := mk("", 1, 0, 1, 0, 1, 1.6, topics.StatusPassed)
	other.TreeID, other.TaskID, other.NodeID = "run-7/task-b/0", "task-b", "x"
	p := build(t, &Input{Samples: append(ss, other)})
	if len(p.Runs) != 1 {
		t.Fatalf("runs %+v", p.Runs)
	}
	r := p.Runs[0]
	if r.ID != "run-7" || r.Trees != 2 || r.Nodes != 6 || r.Solved != 2 || r.PrunedNodes != 7 || r.Placeholders != 3 {
		t.Errorf("run %+v", r)
	}
	if r.Edges[0] != 0 || r.Edges[len(r.Edges)-1] != 1.6 || len(r.Edges) != 11 {
		t.Errorf("edges %v", r.Edges)
	}
	if len(r.Turns) != 2 {
		t.Fatalf("turns %+v", r.Turns)
	}
	t1, t2 := r.Turns[0], r.Turns[1]
	if t1.Turn != 1 || t1.Nodes != 4 || t1.Passed != 2 || t1.Failed != 2 || t1.Lifted != 1 || t1.LiftedBySuccess != 1 {
		t.Errorf("turn 1 %+v", t1)
	}
	if t2.Turn != 2 || t2.Nodes != 2 || t2.Failed != 1 || t2.Lifted != 0 {
		t.Errorf("turn 2 %+v", t2)
	}
	sum := func(h []int) (n int) {
		for _, c := range h {
			n += c
		}
		return n
	}
	if sum(t1.Reward) != 4 || sum(t1.Credited) != 4 || t1.Credited[len(t1.Credited)-1] != 1 {
		t.Errorf("turn 1 histograms %v %v", t1.Reward, t1.Credited)
	}
	if math.Abs(t1.MeanReward-(0+0.5+1+1)/4) > 1e-12 {
		t.Errorf("mean reward %v", t1.MeanReward)
	}
}

func TestLineDiff(t *testing.T) {
	got := LineDiff("a\nb\nc\n", "a\nB\nc\nd\n", 0)
	want := []DiffLine{{"@", "@@ -1,3 +1,4 @@"}, {" ", "a"}, {"-", "b"}, {"+", "B"}, {" ", "c"}, {"+", "d"}}
	if !slices.Equal(got, want) {
		t.Errorf("diff %q, want %q", got, want)
	}
	if d := LineDiff("same\n", "same\n", 0); d == nil || len(d) != 0 {
		t.Errorf("identical: %q", d)
	}
	if d := LineDiff("x", "x\n", 0); !slices.Contains(d, DiffLine{"@", noNewline}) {
		t.Errorf("missing newline not marked: %q", d)
	}
	if d := LineDiff("", "a\nb\n", 0); !slices.Equal(d, []DiffLine{{"@", "@@ -0,0 +1,2 @@"}, {"+", "a"}, {"+", "b"}}) {
		t.Errorf("from empty: %q", d)
	}
	var long strings.Builder
	for range 100 {
		long.WriteString("line\n")
	}
	d := LineDiff("", long.String(), 10)
	if len(d) != 11 || !strings.Contains(d[10].Text, "91 more diff lines") {
		t.Errorf("capped: %d lines, last %q", len(d), d[len(d)-1])
	}
}

func TestRunOf(t *testing.T) {
	for _, c := range [][3]string{
		{"run-1/HumanEval/0/2", "HumanEval/0", "run-1"},
		{"run-1/t/0", "t", "run-1"},
		{"run-1/t/0", "", "run-1"},
		{"tree-x", "t", ""},
		{"a/b/c", "b", ""},
	} {
		if got := RunOf(c[0], c[1]); got != c[2] {
			t.Errorf("RunOf(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

func TestFromRow(t *testing.T) {
	row := dataset.Row{"tree_id": "t", "node_id": "n", "parent_id": "", "group_id": "g", "turn": json.Number("2"),
		"reward": json.Number("0.5"), "credited_reward": json.Number("1"), "advantage": json.Number("-0.25"),
		"route": "masked", "tests_passed": json.Number("3"), "tests_total": json.Number("4"), "in_group_stats": true,
		"response_token_ids": []any{json.Number("1"), json.Number("2")}, "generated_at": nil, "finish_reason": nil}
	s, err := FromRow(row)
	if err != nil {
		t.Fatal(err)
	}
	if s.Turn != 2 || s.Reward != 0.5 || s.CreditedReward != 1 || s.Advantage != -0.25 || s.Route != "masked" ||
		s.TestsPassed != 3 || !s.InGroupStats || s.ResponseTokens != 2 {
		t.Errorf("sample %+v", s)
	}
	for col, v := range map[string]any{"reward": nil, "turn": json.Number("1.5"), "route": json.Number("1"), "node_id": ""} {
		bad := dataset.Row{}
		for k, x := range row {
			bad[k] = x
		}
		bad[col] = v
		if _, err := FromRow(bad); err == nil {
			t.Errorf("%s = %v accepted", col, v)
		}
	}
	delete(row, "credited_reward")
	if _, err := FromRow(row); err == nil || !strings.Contains(err.Error(), "no column credited_reward") {
		t.Errorf("missing column: %v", err)
	}
}

func TestReadDirErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadDir(filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing dir: %v", err)
	}
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file: %v", err)
	}
	empty := t.TempDir()
	if _, err := ReadDir(empty); err == nil || !strings.Contains(err.Error(), "no batch files") {
		t.Errorf("empty dir: %v", err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "x.arrow"), []byte("not arrow at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(bad); err == nil || !strings.Contains(err.Error(), "x.arrow") {
		t.Errorf("malformed file: %v", err)
	}
	if _, err := Build(&Input{Source: "nothing"}, Options{}); err == nil {
		t.Error("an empty input must be an error")
	}
}

// hostile is model output that tries to break out of every context.
const hostile = "</script><script>document.body.setAttribute('data-pwned','1')</script><img src=x onerror=\"document.body.setAttribute('data-pwned','2')\"><!-- \u2028 ]]> {{.}} &amp;"

func hostilePage(t *testing.T) *Page {
	ss := handTree()
	ss[3].ResponseText = hostile + "\nprint(1)\n"
	ss[3].PromptText = hostile
	ss[3].Feedback = hostile
	ss[3].FailureCause = "<b>cause</b>"
	ss[3].TaskID = "<i>task</i>"
	// A second, complete tree: no placeholders at all.
	for i, st := range []string{topics.StatusPassed, topics.StatusWrongAnswer} {
		s := mk("", 1, i, 2, 0, float64(1-i), float64(1-i), st)
		s.TreeID, s.TaskID, s.NodeID, s.PrunedNodes = "run-7/task-c/0", "task-c", "c"+st, 0
		ss = append(ss, s)
	}
	return build(t, &Input{Source: "<script>src</script>", Samples: ss})
}

func renderString(t *testing.T, p *Page) string {
	var b bytes.Buffer
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var dataScript = regexp.MustCompile(`(?s)<script type="application/json" id="murphy-data">(.*?)</script>`)

func TestRenderEscapesData(t *testing.T) {
	p := hostilePage(t)
	html := renderString(t, p)
	if n := strings.Count(html, "<script"); n != 2 {
		t.Errorf("%d <script elements, want 2 (data and code)", n)
	}
	for _, bad := range []string{"<img src=x", "<script>document.body", "<b>cause</b>", "<i>task</i>", "<!-- \u2028"} {
		if strings.Contains(html, bad) {
			t.Errorf("page holds %q unescaped", bad)
		}
	}
	m := dataScript.FindStringSubmatch(html)
	if m == nil {
		t.Fatal("no data script")
	}
	var back Page
	if err := json.Unmarshal([]byte(m[1]), &back); err != nil {
		t.Fatalf("embedded data is not JSON: %v", err)
	}
	if back.Nodes != p.Nodes || len(back.Trees) != 2 {
		t.Fatalf("round trip: %d nodes", back.Nodes)
	}
	if n := nodeByID(back.Trees[0], p.Trees[0].Nodes[3].ID); n == nil || !strings.HasPrefix(n.Response, hostile) || n.Feedback != hostile ||
		back.Prompts[n.PromptRef] != hostile {
		t.Errorf("hostile text did not survive the round trip: %+v", n)
	}
	// Each distinct prompt is held once: "task" and the hostile one.
	if len(back.Prompts) != 2 {
		t.Errorf("prompts %q", back.Prompts)
	}
	// Self-contained: nothing is fetched (the data, which quotes the
	// hostile text, aside).
	code := strings.Replace(html, m[1], "", 1)
	for _, re := range []string{`(?i)\ssrc\s*=`, `(?i)<link`, `(?i)href\s*=\s*"?https?:`, `(?i)@import`, `(?i)url\(\s*['"]?https?:`} {
		if regexp.MustCompile(re).MatchString(code) {
			t.Errorf("page references something outside itself (%s)", re)
		}
	}
	if !strings.Contains(html, "default-src 'none'") {
		t.Error("no content security policy")
	}
}

// The script never turns data into markup.
func TestScriptWritesTextOnly(t *testing.T) {
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setTimeout('", "javascript:"} {
		if strings.Contains(pageJS, sink) {
			t.Errorf("page.js uses %s", sink)
		}
	}
}

// TestInspectPageInChromium loads a page with hostile text in headless
// Chromium: every node is drawn, the detail panel shows the text as text,
// and nothing in it ran.
func TestInspectPageInChromium(t *testing.T) {
	bin := chromiumtest.Find(t)
	p := hostilePage(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "page.html")
	if err := WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	target := p.Trees[0].Nodes[3]
	dom := chromiumtest.DumpDOM(t, bin, chromiumtest.FileURL(path, "node="+treeID+"/"+target.ID))
	if s := chromiumtest.BodyAttr(t, dom, "data-render-status"); s != "ok" {
		t.Fatalf("render status %q", s)
	}
	if n := chromiumtest.BodyInt(t, dom, "data-rendered-nodes"); n != p.Nodes {
		t.Errorf("rendered %d nodes, want %d", n, p.Nodes)
	}
	if n := chromiumtest.BodyInt(t, dom, "data-rendered-placeholders"); n != p.Placeholders {
		t.Errorf("rendered %d placeholders, want %d", n, p.Placeholders)
	}
	if strings.Contains(regexp.MustCompile(`<body[^>]*>`).FindString(dom), "data-pwned") || strings.Contains(dom, "<img") {
		t.Fatal("hostile text ran or became markup")
	}
	// The selected node's texts are in the panel, as text.
	esc := "&lt;/script&gt;&lt;script&gt;document.body.setAttribute('data-pwned','1')&lt;/script&gt;&lt;img src=x"
	if c := strings.Count(dom, esc); c < 3 {
		t.Errorf("hostile text shown %d times as text, want prompt, response and feedback", c)
	}
	if !strings.Contains(dom, `class="diff"`) {
		t.Error("no diff in the detail panel")
	}
}
