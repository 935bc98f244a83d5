package inspect

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// Page is everything the HTML page shows; it is embedded as JSON.
type Page struct {
	Title       string                `json:"title"`
	Source      string                `json:"source"`
	GeneratedAt string                `json:"generated_at"`
	Configs     []topics.CreditConfig `json:"configs"`
	// Nodes counts the samples drawn (one per row / credited sample);
	// Placeholders the placeholder marks (each standing for Count missing
	// members); Ghosts the missing parents drawn for surviving children.
	Nodes        int      `json:"nodes"`
	Placeholders int      `json:"placeholders"`
	Ghosts       int      `json:"ghosts"`
	Duplicates   int      `json:"duplicates"`
	Skipped      int      `json:"skipped"`
	Notes        []string `json:"notes,omitempty"`
	// TotalTrees is the number of trees read; Trees may hold fewer
	// (Options.MaxTrees).
	TotalTrees int     `json:"total_trees"`
	Runs       []*Run  `json:"runs"`
	Trees      []*Tree `json:"trees"`
	// Prompts holds each distinct prompt text once (Node.PromptRef).
	Prompts []string `json:"prompts"`
}

// Tree is one rollout tree laid out for drawing: x in leaf slots
// (0..Width-1), depth in turns (the task itself is depth 0).
type Tree struct {
	ID          string `json:"id"`
	TaskID      string `json:"task_id"`
	Run         string `json:"run"`
	Incomplete  bool   `json:"incomplete"`
	MaxTurns    int    `json:"max_turns"`
	PrunedNodes int    `json:"pruned_nodes"`
	// HiddenPruned counts pruned nodes that no placeholder stands for:
	// descendants of pruned members, which left no trace in the rows.
	HiddenPruned int            `json:"hidden_pruned"`
	Solved       bool           `json:"solved"`
	Width        int            `json:"width"`
	Depth        int            `json:"depth"`
	Nodes        []*Node        `json:"nodes"`
	Placeholders []*Placeholder `json:"placeholders"`
}

// Node is one drawn node: a sample, or a ghost (a missing parent of
// surviving children, Ghost set, without sample fields).
type Node struct {
	ID string `json:"id"`
	// Up is the drawn item this one hangs from ("" = the task).
	Up                string  `json:"up"`
	Ghost             bool    `json:"ghost,omitempty"`
	Detached          bool    `json:"detached,omitempty"`
	ParentID          string  `json:"parent_id"`
	GroupID           string  `json:"group_id"`
	Turn              int     `json:"turn"`
	Index             int     `json:"index"`
	GroupSize         int     `json:"group_size"`
	ChildrenRequested int     `json:"children_requested"`
	Reward            float64 `json:"reward"`
	Credited          float64 `json:"credited"`
	Advantage         float64 `json:"advantage"`
	Route             string  `json:"route"`
	Cause             string  `json:"cause"`
	Status            string  `json:"status"`
	Finish            string  `json:"finish"`
	InStats           bool    `json:"in_stats"`
	Passed            int     `json:"passed"`
	Total             int     `json:"total"`
	Policy            string  `json:"policy"`
	PolicyVersion     int64   `json:"policy_version"`
	Tokens            int     `json:"tokens"`
	// Prompt is the node's prompt; the page holds each distinct prompt
	// once (Page.Prompts, the members of a group share theirs) and the node
	// its index, PromptRef.
	Prompt    string     `json:"-"`
	PromptRef int        `json:"prompt"`
	Response  string     `json:"response"`
	Feedback  string     `json:"feedback"`
	Diff      []DiffLine `json:"diff"`
	// Failed: a trained response that did not pass. Lifted: a failed node
	// whose credited reward exceeds its reward. SolvedBelow: it has a
	// surviving descendant that passed.
	Failed      bool    `json:"failed"`
	Lifted      bool    `json:"lifted"`
	SolvedBelow bool    `json:"solved_below"`
	Descendants int     `json:"descendants"`
	X           float64 `json:"x"`
	Depth       int     `json:"depth"`
}

// Placeholder stands for the missing members of one response group:
// members that pruning or a zero-signal drop removed (or, in a tree closed
// incomplete, that never arrived).
type Placeholder struct {
	ID string `json:"id"`
	Up string `json:"up"` // the group's parent item ("" = the task)
	// Group is the group id (the parent node; the root group's id).
	Group   string   `json:"group"`
	Turn    int      `json:"turn"`
	Count   int      `json:"count"`
	Of      int      `json:"of"` // the group's requested size
	Indices []int    `json:"indices"`
	IDs     []string `json:"ids,omitempty"` // derived node ids (topics.NodeID), when the tree's ids follow it
	Reason  string   `json:"reason"`
	X       float64  `json:"x"`
	Depth   int      `json:"depth"`
}

// Options tune Build.
type Options struct {
	Title string
	// MaxTrees keeps the first MaxTrees trees (by tree id); 0 keeps all.
	MaxTrees int
	// Now stamps the page; zero means time.Now.
	Now time.Time
	// Bins is the number of histogram bins (default 10).
	Bins int
}

// maxDiffLines caps the diff lines embedded per node.
const maxDiffLines = 400

// Build assembles the page: trees with their nodes, placeholders and
// layout, and per-run statistics.
func Build(in *Input, opt Options) (*Page, error) {
	if len(in.Samples) == 0 {
		return nil, fmt.Errorf("inspect: %s holds no samples", in.Source)
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	// Slices the page reads are never null in the JSON.
	p := &Page{Title: opt.Title, Source: in.Source, GeneratedAt: now.UTC().Format(time.RFC3339),
		Configs: append([]topics.CreditConfig{}, in.Configs...), Skipped: in.Skipped, Notes: in.Notes, Trees: []*Tree{}}
	if p.Title == "" {
		p.Title = "murphy inspect: " + in.Source
	}
	byTree := map[string][]*Sample{}
	var ids []string
	for i := range in.Samples {
		s := &in.Samples[i]
		if _, ok := byTree[s.TreeID]; !ok {
			ids = append(ids, s.TreeID)
		}
		byTree[s.TreeID] = append(byTree[s.TreeID], s)
	}
	sort.Strings(ids)
	p.TotalTrees = len(ids)
	if opt.MaxTrees > 0 && len(ids) > opt.MaxTrees {
		ids = ids[:opt.MaxTrees]
	}
	dropZero := false
	for _, c := range in.Configs {
		dropZero = dropZero || c.DropZeroSignal
	}
	for _, id := range ids {
		t, dups := buildTree(id, byTree[id], dropZero)
		p.Duplicates += dups
		p.Trees = append(p.Trees, t)
		for _, n := range t.Nodes {
			if n.Ghost {
				p.Ghosts++
			} else {
				p.Nodes++
			}
		}
		p.Placeholders += len(t.Placeholders)
	}
	// JSON has no NaN or infinity; credit never emits them, but a page
	// must still render if some did.
	bad := 0
	for _, t := range p.Trees {
		for _, n := range t.Nodes {
			for _, f := range []*float64{&n.Reward, &n.Credited, &n.Advantage} {
				if math.IsNaN(*f) || math.IsInf(*f, 0) {
					*f = 0
					bad++
				}
			}
		}
	}
	if bad > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d non-finite reward, credited reward or advantage values are shown as 0", bad))
	}
	p.Runs = runStats(p.Trees, opt.Bins)
	p.Prompts = []string{}
	seen := map[string]int{}
	for _, t := range p.Trees {
		for _, n := range t.Nodes {
			i, ok := seen[n.Prompt]
			if !ok {
				i = len(p.Prompts)
				seen[n.Prompt] = i
				p.Prompts = append(p.Prompts, n.Prompt)
			}
			n.PromptRef = i
		}
	}
	return p, nil
}

// RunOf returns the run id in a tree id <run>/<task>/<k> (topics.TreeID),
// or "" when the tree id does not have that shape.
func RunOf(treeID, taskID string) string {
	i := strings.LastIndexByte(treeID, '/')
	if i < 0 {
		return ""
	}
	if _, err := strconv.Atoi(treeID[i+1:]); err != nil {
		return ""
	}
	rest := treeID[:i]
	if taskID != "" {
		if r, ok := strings.CutSuffix(rest, "/"+taskID); ok {
			return r
		}
		return ""
	}
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// group is one response group of a tree under construction.
type group struct {
	key     string // parent node id ("" for the root group)
	id      string // group id
	turn    int
	of      int
	members []*Node
}

// treeBuilder builds one tree's view from its samples, a step at a time.
type treeBuilder struct {
	id    string
	t     *Tree
	nodes map[string]*Node // by id, ghosts included once placed
	order []*Node          // the samples' nodes, in input order
	// derivable: every node id is the one topics.NodeID derives, so a
	// missing member's id is known.
	derivable bool
	groups    map[string]*group // by parent node id
	keys      []string          // groups' keys, sorted
	ghosts    []*Node
	kids      map[string][]child // each drawn item's children, by sample index
	next      int                // the next leaf slot
	visited   map[string]bool
}

// child is a drawn item under its parent: a node or a placeholder.
type child struct {
	key  int
	id   string
	node *Node
	ph   *Placeholder
}

func buildTree(id string, samples []*Sample, dropZero bool) (*Tree, int) {
	b := &treeBuilder{id: id, t: &Tree{ID: id, Placeholders: []*Placeholder{}}, nodes: map[string]*Node{}, derivable: true}
	t := b.t
	dups := b.addSamples(samples)
	t.Run = RunOf(id, t.TaskID)
	b.groupNodes()
	phs, byDerived := b.placeholders(missingReason(t, dropZero))
	b.addGhosts(byDerived)
	shown := 0
	for _, ph := range phs {
		if ph.Count > 0 {
			t.Placeholders = append(t.Placeholders, ph)
			shown += ph.Count
		}
	}
	// Pruning takes a member's subtree with it: what the placeholders do
	// not show are those descendants. (Unknown when zero-signal drops or an
	// incomplete tree also leave gaps.)
	if !t.Incomplete && !dropZero {
		t.HiddenPruned = max(t.PrunedNodes-shown, 0)
	}
	b.children()
	b.layout()
	b.derive()
	return t, dups
}

// addSamples makes a node of each sample, the first of a node id only,
// and returns how many duplicates it left out.
func (b *treeBuilder) addSamples(samples []*Sample) int {
	t, id := b.t, b.id
	dups := 0
	for _, s := range samples {
		if _, dup := b.nodes[s.NodeID]; dup {
			dups++
			continue
		}
		n := &Node{ID: s.NodeID, ParentID: s.ParentID, GroupID: s.GroupID, Turn: s.Turn, Index: s.SampleIndex,
			GroupSize: s.GroupSize, ChildrenRequested: s.ChildrenRequested, Reward: s.Reward, Credited: s.CreditedReward,
			Advantage: s.Advantage, Route: s.Route, Cause: s.FailureCause, Status: s.Status, Finish: s.FinishReason,
			InStats: s.InGroupStats, Passed: s.TestsPassed, Total: s.TestsTotal, Policy: s.Policy, PolicyVersion: s.PolicyVersion,
			Tokens: s.ResponseTokens, Prompt: s.PromptText, Response: s.ResponseText, Feedback: s.Feedback}
		n.Failed = n.Route == topics.RouteTrain && !passed(n)
		n.Lifted = n.Failed && n.Credited > n.Reward+1e-9
		b.nodes[n.ID] = n
		b.order = append(b.order, n)
		t.TaskID = firstNonEmpty(t.TaskID, s.TaskID)
		t.Incomplete = t.Incomplete || s.Incomplete
		t.PrunedNodes = max(t.PrunedNodes, s.PrunedNodes)
		t.MaxTurns = max(t.MaxTurns, s.MaxTurns, s.Turn)
		t.Solved = t.Solved || passed(n)
		base := s.ParentID
		if base == "" {
			base = firstNonEmpty(s.GroupID, topics.RootID(id))
		}
		if topics.NodeID(id, base, s.SampleIndex) != s.NodeID {
			b.derivable = false
		}
	}
	return dups
}

// groupNodes makes the groups: by parent node ("" = the root group, and
// a group for each node that requested children), members by (index, id).
func (b *treeBuilder) groupNodes() {
	b.groups = map[string]*group{}
	addGroup := func(key string) *group {
		g := b.groups[key]
		if g == nil {
			g = &group{key: key}
			b.groups[key] = g
			b.keys = append(b.keys, key)
		}
		return g
	}
	for _, n := range b.order {
		g := addGroup(n.ParentID)
		g.members = append(g.members, n)
		g.of = max(g.of, n.GroupSize)
		if g.turn == 0 || n.Turn < g.turn {
			g.turn = n.Turn
		}
		if g.id == "" {
			g.id = n.GroupID
		}
	}
	for _, n := range b.order {
		if n.ChildrenRequested > 0 {
			g := addGroup(n.ID)
			g.of = max(g.of, n.ChildrenRequested)
			if g.turn == 0 {
				g.turn = n.Turn + 1
			}
		}
	}
	sort.Strings(b.keys)
	for _, k := range b.keys {
		g := b.groups[k]
		if g.id == "" {
			g.id = k
			if k == "" {
				g.id = topics.RootID(b.id)
			}
		}
		slices.SortFunc(g.members, func(a, b *Node) int {
			return cmp.Or(cmp.Compare(a.Index, b.Index), strings.Compare(a.ID, b.ID))
		})
	}
}

// placeholders are the placeholders for the members each group lacks,
// and, when ids are derivable, the placeholder of each missing member's
// id.
func (b *treeBuilder) placeholders(reason string) ([]*Placeholder, map[string]*Placeholder) {
	byDerived := map[string]*Placeholder{}
	var phs []*Placeholder
	for _, k := range b.keys {
		g := b.groups[k]
		have := map[int]bool{}
		for _, m := range g.members {
			have[m.Index] = true
		}
		ph := &Placeholder{ID: "missing:" + g.id, Up: g.key, Group: g.id, Turn: g.turn, Of: g.of, Reason: reason, Indices: []int{}}
		for i := 0; i < g.of; i++ {
			if !have[i] {
				ph.Indices = append(ph.Indices, i)
				if b.derivable {
					d := topics.NodeID(b.id, g.id, i)
					ph.IDs = append(ph.IDs, d)
					byDerived[d] = ph
				}
			}
		}
		// Members beyond the indices (odd input) still count.
		ph.Count = len(ph.Indices)
		if extra := g.of - len(g.members) - ph.Count; extra > 0 {
			ph.Count += extra
		}
		if ph.Count > 0 {
			phs = append(phs, ph)
		}
	}
	return phs, byDerived
}

// addGhosts adds a ghost for each missing parent of surviving children.
// When the parent is the derived id of a placeholder's member, the ghost
// takes that member's place under the same parent.
func (b *treeBuilder) addGhosts(byDerived map[string]*Placeholder) {
	for _, k := range b.keys {
		if k == "" || b.nodes[k] != nil || len(b.groups[k].members) == 0 {
			continue
		}
		g := b.groups[k]
		gh := &Node{ID: k, Ghost: true, Turn: g.turn - 1, Index: -1}
		if ph := byDerived[k]; ph != nil {
			i := slices.Index(ph.IDs, k)
			gh.Index = ph.Indices[i]
			gh.Up = ph.Up
			gh.GroupID = ph.Group
			ph.IDs = slices.Delete(ph.IDs, i, i+1)
			ph.Indices = slices.Delete(ph.Indices, i, i+1)
			ph.Count--
		}
		b.nodes[gh.ID] = gh
		b.ghosts = append(b.ghosts, gh)
	}
}

// children lists the children of each drawn item, ordered by sample
// index: nodes, ghosts (last when their index is unknown) and
// placeholders (at their first missing index).
func (b *treeBuilder) children() {
	kids := map[string][]child{}
	for _, n := range b.order {
		n.Up = n.ParentID // a missing parent is a ghost by now
		kids[n.Up] = append(kids[n.Up], child{key: n.Index, id: n.ID, node: n})
	}
	for _, gh := range b.ghosts {
		key := gh.Index
		if key < 0 {
			key = math.MaxInt32
		}
		kids[gh.Up] = append(kids[gh.Up], child{key: key, id: gh.ID, node: gh})
	}
	for _, ph := range b.t.Placeholders {
		key := math.MaxInt32
		if len(ph.Indices) > 0 {
			key = ph.Indices[0]
		}
		kids[ph.Up] = append(kids[ph.Up], child{key: key, id: ph.ID, ph: ph})
	}
	for k := range kids {
		slices.SortFunc(kids[k], func(a, b child) int {
			return cmp.Or(cmp.Compare(a.key, b.key), strings.Compare(a.id, b.id))
		})
	}
	b.kids = kids
}

// layout places the items: leaves take consecutive slots, a parent sits
// over the middle of its children; depth is the turn (structural depth
// when unknown). Whatever the root does not reach (a cycle in the parent
// links) hangs from the task, flagged.
func (b *treeBuilder) layout() {
	t := b.t
	b.visited = map[string]bool{}
	for _, c := range b.kids[""] {
		b.place(c, 1)
	}
	for _, n := range b.order {
		if !b.visited[n.ID] {
			n.Detached = true
			n.Up = ""
			b.place(child{node: n}, 1)
		}
	}
	t.Width = max(b.next, 1)
	all := append(b.order, b.ghosts...)
	for _, n := range all {
		t.Depth = max(t.Depth, n.Depth)
	}
	for _, ph := range t.Placeholders {
		t.Depth = max(t.Depth, ph.Depth)
	}
	t.Nodes = all
}

// place lays out c and its subtree at depth, returning c's x.
func (b *treeBuilder) place(c child, depth int) float64 {
	if c.ph != nil {
		c.ph.Depth = max(c.ph.Turn, depth)
		c.ph.X = float64(b.next)
		b.next++
		return c.ph.X
	}
	n := c.node
	b.visited[n.ID] = true
	n.Depth = depth
	if n.Turn > 0 {
		n.Depth = n.Turn
	}
	var xs []float64
	for _, k := range b.kids[n.ID] {
		if k.node != nil && b.visited[k.node.ID] {
			continue
		}
		xs = append(xs, b.place(k, n.Depth+1))
	}
	if len(xs) == 0 {
		n.X = float64(b.next)
		b.next++
	} else {
		n.X = (xs[0] + xs[len(xs)-1]) / 2
	}
	return n.X
}

// derive sets what each node shows of its subtree: descendants, a passed
// descendant, and the diff to the parent's response.
func (b *treeBuilder) derive() {
	for _, n := range b.t.Nodes {
		b.count(n, map[string]bool{})
		if p := b.nodes[n.ParentID]; !n.Ghost && n.ParentID != "" && p != nil && !p.Ghost {
			n.Diff = LineDiff(p.Response, n.Response, maxDiffLines)
		}
	}
}

// count sets n's descendants and whether one passed, not going through
// the nodes in seen.
func (b *treeBuilder) count(n *Node, seen map[string]bool) (int, bool) {
	seen[n.ID] = true
	total, solved := 0, false
	for _, k := range b.kids[n.ID] {
		if k.node == nil || seen[k.node.ID] {
			continue
		}
		c, s := b.count(k.node, seen)
		total += c + 1
		solved = solved || s || (!k.node.Ghost && passed(k.node))
	}
	n.Descendants, n.SolvedBelow = total, solved
	return total, solved
}

// passed says whether a node's response passed its tests.
func passed(n *Node) bool {
	if n.Status != "" {
		return n.Status == topics.StatusPassed
	}
	return n.Cause == topics.StatusPassed
}

// missingReason says why members of a tree's groups are missing.
func missingReason(t *Tree, dropZero bool) string {
	switch {
	case t.Incomplete:
		return "missing: the tree was closed incomplete (never arrived, or pruned)"
	case t.PrunedNodes > 0 && dropZero:
		return "pruned (INTRAP/INTERP) or dropped (zero-signal group)"
	case t.PrunedNodes > 0:
		return "pruned (INTRAP/INTERP)"
	case dropZero:
		return "dropped (zero-signal group)"
	default:
		return "missing from the output"
	}
}
