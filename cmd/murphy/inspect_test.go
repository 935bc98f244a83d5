package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/murphy-rl/murphy/internal/inspect"
	"github.com/murphy-rl/murphy/internal/inspect/chromiumtest"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

var inspectData = regexp.MustCompile(`(?s)<script type="application/json" id="murphy-data">(.*?)</script>`)

// readInspectPage returns the data embedded in a page written by murphy
// inspect.
func readInspectPage(t *testing.T, path string) (*inspect.Page, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := inspectData.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no embedded data", path)
	}
	var p inspect.Page
	if err := json.Unmarshal(m[1], &p); err != nil {
		t.Fatalf("%s: embedded data: %v", path, err)
	}
	return &p, string(b)
}

// TestInspectRunInChromium runs the pipeline (with INTRAP pruning, so that
// groups lose members), draws its output directory with murphy inspect and
// loads the page in headless Chromium: the page draws exactly one node per
// Arrow row, one placeholder per group with pruned members, and a
// screenshot of it is a real image.
func TestInspectRunInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline")
	}
	bin := chromiumtest.Find(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	stdout, errOut, err := runMurphy(t, "run", "--out", out, "--turns", "2", "--group-sizes", "4,3", "--credit.intrap-k", "3",
		"--calibrate=false", "--progress", "0", "--kinds", "python-function,stdio")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, errOut)
	}
	rows, err := dataset.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	trees := dataset.Trees(rows)
	if len(rows) == 0 {
		t.Fatal("the run wrote no rows")
	}

	page := filepath.Join(dir, "inspect.html")
	if _, errOut, err := runMurphy(t, "inspect", out, "--html", page); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	p, html := readInspectPage(t, page)
	if p.Nodes != len(rows) || len(p.Trees) != trees || p.TotalTrees != trees {
		t.Fatalf("page data: %d nodes in %d trees, want %d rows in %d trees", p.Nodes, len(p.Trees), len(rows), trees)
	}
	pruned := 0
	for _, tr := range p.Trees {
		pruned += tr.PrunedNodes
	}
	if pruned == 0 || p.Placeholders == 0 {
		t.Fatalf("intrap_k=3 on root groups of 4 pruned %d nodes, %d placeholders: want both > 0", pruned, p.Placeholders)
	}
	if len(p.Configs) != 1 || p.Configs[0].IntrapK != 3 {
		t.Errorf("credit configuration from the file metadata: %+v", p.Configs)
	}
	if len(p.Runs) != 1 || len(p.Runs[0].Turns) != 2 {
		t.Errorf("runs %+v", p.Runs)
	}
	if strings.Contains(html, "<link") || regexp.MustCompile(`(?i)\ssrc\s*=\s*"`).MatchString(strings.Replace(html, inspectData.FindString(html), "", 1)) {
		t.Error("page loads something from outside")
	}

	dom := chromiumtest.DumpDOM(t, bin, chromiumtest.FileURL(page, ""))
	if s := chromiumtest.BodyAttr(t, dom, "data-render-status"); s != "ok" {
		t.Fatalf("render status %q (%s)", s, regexp.MustCompile(`<body[^>]*>`).FindString(dom))
	}
	if n := chromiumtest.BodyInt(t, dom, "data-rendered-nodes"); n != len(rows) {
		t.Errorf("the page drew %d nodes, the Arrow files hold %d rows", n, len(rows))
	}
	if n := chromiumtest.BodyInt(t, dom, "data-rendered-trees"); n != trees {
		t.Errorf("the page drew %d trees, want %d", n, trees)
	}
	if n := chromiumtest.BodyInt(t, dom, "data-rendered-placeholders"); n != p.Placeholders {
		t.Errorf("the page drew %d placeholders, want %d", n, p.Placeholders)
	}
	if c := strings.Count(dom, `data-chart="histogram"`); c != 2 {
		t.Errorf("%d histograms, want one per turn (2)", c)
	}
	if !strings.Contains(dom, `data-chart="credit-flow"`) {
		t.Error("no credit-flow chart")
	}
	const w, h = 1400, 1000
	shot := chromiumtest.Screenshot(t, bin, chromiumtest.FileURL(page, ""), dir, w, h)
	chromiumtest.CheckPNG(t, shot, w, h)
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "x.html")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"inspect", filepath.Join(dir, "missing"), "--html", html}, 1, "no such file or directory"},
		{[]string{"inspect", dir, "--html", html}, 1, "no batch files"},
		{[]string{"inspect", dir}, 2, "--html FILE is required"},
		{[]string{"inspect", "--html", html}, 2, "give one OUT_DIR, or --from-topic"},
		{[]string{"inspect", dir, "--from-topic", "--html", html}, 2, "not both"},
	} {
		_, _, err := runMurphy(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != c.code {
			t.Errorf("%v: err %v (exit %d), want %q (exit %d)", c.args, err, exitCode(err), c.want, c.code)
		}
	}
	if _, err := os.Stat(html); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed inspect left %s behind", html)
	}
}

// creditedTree is a small credited tree: a root group of two (one passed,
// one failed and refined) and one refinement with executor feedback.
func creditedTree(treeID string) topics.CreditedTree {
	root := topics.RootID(treeID)
	a, b := topics.NodeID(treeID, root, 0), topics.NodeID(treeID, root, 1)
	c := topics.NodeID(treeID, b, 0)
	s := func(id, parent, group string, turn, index, size, children int, reward, credited float64, status, feedback string) topics.CreditedSample {
		var cs topics.CreditedSample
		cs.TreeID, cs.TaskID, cs.NodeID, cs.ParentID, cs.GroupID = treeID, "t1", id, parent, group
		cs.Turn, cs.MaxTurns, cs.Index, cs.GroupSize, cs.ChildrenRequested = turn, 2, index, size, children
		cs.Reward, cs.CreditedReward, cs.Status, cs.FailureCause, cs.Route = reward, credited, status, status, topics.RouteTrain
		cs.Feedback, cs.ResponseText, cs.PromptText = feedback, "answer "+id+"\n", "prompt"
		return cs
	}
	return topics.CreditedTree{SchemaVersion: topics.SchemaVersion, TreeID: treeID, TaskID: "t1",
		Config: topics.CreditConfig{Strategy: "mars", Advantage: "std"},
		Samples: []topics.CreditedSample{
			s(a, "", root, 1, 0, 2, 0, 1, 1, topics.StatusPassed, ""),
			s(b, "", root, 1, 1, 2, 1, 0, 1, topics.StatusWrongAnswer, "case 1: expected 2, got 3"),
			s(c, b, b, 2, 0, 1, 0, 1, 1, topics.StatusPassed, ""),
		}}
}

// TestInspectFromTopic reads the credited topic up to its high watermark
// and stops: bad records are skipped, a repeated tree is kept once, and the
// feedback (which only the topic carries) reaches the page.
func TestInspectFromTopic(t *testing.T) {
	pipelinetest.OnEachBroker(t, func(t *testing.T, brokers []string) {
		cat := pipelinetest.Catalog(t, brokers, 2)
		topic := cat.Topic(topics.Credited)
		var outs []pipeline.Out
		for _, id := range []string{"r/t1/0", "r/t1/1", "r/t1/0"} {
			tr := creditedTree(id)
			b, err := topics.Encode(&tr)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, pipeline.Out{Topic: topic, Key: id, Value: b})
		}
		outs = append(outs, pipeline.Out{Topic: topic, Key: "r/t1/0", Value: []byte("not json")})
		pipelinetest.Produce(t, brokers, outs...)

		page := filepath.Join(t.TempDir(), "topic.html")
		_, errOut, err := runMurphy(t, "inspect", "--from-topic", "--kafka.brokers", strings.Join(brokers, ","),
			"--topics.prefix", cat.Prefix, "--html", page, "--timeout", "1m")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		p, _ := readInspectPage(t, page)
		if len(p.Trees) != 2 || p.Nodes != 6 || p.Skipped != 1 {
			t.Fatalf("%d trees, %d nodes, %d skipped; want 2, 6, 1 (notes %v)", len(p.Trees), p.Nodes, p.Skipped, p.Notes)
		}
		if !strings.Contains(strings.Join(p.Notes, "\n"), "repeated a tree") {
			t.Errorf("notes %v", p.Notes)
		}
		found := false
		for _, n := range p.Trees[0].Nodes {
			found = found || n.Feedback == "case 1: expected 2, got 3"
		}
		if !found {
			t.Error("the feedback did not reach the page")
		}
		if r := p.Runs; len(r) != 1 || r[0].ID != "r" || r[0].Turns[0].LiftedBySuccess != 2 {
			t.Errorf("runs %+v", r)
		}

		// An empty credited topic is an error, not an empty page.
		empty := pipelinetest.Catalog(t, brokers, 1)
		_, _, err = runMurphy(t, "inspect", "--from-topic", "--kafka.brokers", strings.Join(brokers, ","),
			"--topics.prefix", empty.Prefix, "--html", page+".2", "--timeout", "1m")
		if err == nil || !strings.Contains(err.Error(), "holds no credited trees") {
			t.Errorf("empty topic: %v", err)
		}
	})
}
