// Package credit assembles rollout trees from governed samples, prunes them,
// propagates rewards from the leaves back to the root (MARS or MERS) and
// computes GRPO advantages per response group (DESIGN §4 credit).
//
// The core (Tree, Credit) is plain functions over a tree with no Kafka in
// it; the offline mode (Offline) and the stateful stage (Stage) wrap it.
package credit

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/murphy-rl/murphy/topics"
)

// SampleError says why a sample cannot join its tree. It is poison: the
// same bytes can never join.
type SampleError struct {
	TreeID string
	NodeID string
	Field  string
	Reason string
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("credit: sample %q of tree %q: %s: %s", e.NodeID, e.TreeID, e.Field, e.Reason)
}

type node struct {
	s     *topics.Sample
	group int32 // the group the node belongs to
	child int32 // the group sampled from the node, -1 if none
}

// ref locates an id: the node with that id and the group sampled from it
// (-1 where absent).
type ref struct{ node, group int32 }

type group struct {
	id       string
	root     bool  // the root group (index 0), sampled from the task's own prompt
	parent   int32 // node the group was sampled from; -1 for the root group or while it has not arrived
	turn     int   // turn of the members; 0 while unknown
	expected int   // members expected: the largest of group_size and the parent's children_requested
	members  []int32
}

// Tree is one rollout tree being assembled. Samples may arrive in any
// order and more than once; the first arrival of a node id wins.
type Tree struct {
	id     string
	taskID string
	// rootGroup is the root group's id: the group_id its members share
	// (opaque; murphy's own is topics.RootID), or topics.RootID when none
	// has named one yet. The root group is groups[0] and is not in ids.
	rootGroup string
	rootNamed bool // a root member named rootGroup
	nodes     []node
	groups    []group
	// ids maps node ids and refinement group ids (a refinement group's id
	// is its parent's node id) to their indices, so one lookup answers both.
	ids map[string]ref
	// deficit counts what the tree still waits for: missing members of
	// every known group plus one per non-root group whose parent node has
	// not arrived. The tree is complete when it reaches zero.
	deficit int
}

// NewTree starts an empty tree. Its root group waits for at least one
// member. The root group's id is whatever id its members share (murphy's
// own records use topics.RootID(treeID)); members with an empty group_id
// take the shared one, or topics.RootID(treeID) when none names one.
func NewTree(treeID string) *Tree {
	t := &Tree{
		id:        treeID,
		rootGroup: topics.RootID(treeID),
		ids:       make(map[string]ref, 8),
	}
	t.groups = append(t.groups, group{id: t.rootGroup, root: true, parent: -1, turn: 1, expected: 1})
	t.deficit = 1
	return t
}

// RootGroup is the root group's id (see NewTree).
func (t *Tree) RootGroup() string { return t.rootGroup }

// ID is the tree id.
func (t *Tree) ID() string { return t.id }

// TaskID is the task id of the first sample that carried one.
func (t *Tree) TaskID() string { return t.taskID }

// Len is the number of distinct nodes.
func (t *Tree) Len() int { return len(t.nodes) }

// Has reports whether node id has arrived.
func (t *Tree) Has(id string) bool {
	r, ok := t.ids[id]
	return ok && r.node >= 0
}

// known reports whether id is a node id, arrived or named as a parent.
func (t *Tree) known(id string) bool {
	_, ok := t.ids[id]
	return ok
}

// Complete reports whether every group has all the members it expects and
// every node that requested children has its whole child group.
func (t *Tree) Complete() bool { return t.deficit == 0 }

func (t *Tree) groupDeficit(g *group) int {
	d := g.expected - len(g.members)
	if d < 0 {
		d = 0
	}
	if g.parent < 0 && !g.root {
		d++
	}
	return d
}

func (t *Tree) bad(s *topics.Sample, field, format string, args ...any) error {
	return &SampleError{TreeID: t.id, NodeID: s.NodeID, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// check verifies the fields the core relies on, without the rest of the
// online validation (so offline inputs may carry only the credit fields):
// its ids, its own fields, then its turn against the tree's groups.
func (t *Tree) check(s *topics.Sample, self, parent ref, parentOK bool) error {
	if err := t.checkIDs(s); err != nil {
		return err
	}
	if err := t.checkFields(s); err != nil {
		return err
	}
	return t.checkTurn(s, self, parent, parentOK)
}

// checkIDs verifies s's tree, node, parent and group ids: present, and
// consistent with the root group's id and with each other.
func (t *Tree) checkIDs(s *topics.Sample) error {
	switch {
	case s.TreeID != t.id:
		return t.bad(s, "tree_id", "sample belongs to tree %q", s.TreeID)
	case s.NodeID == "":
		return t.bad(s, "node_id", "empty")
	case s.ParentID == "" && s.GroupID != "" && t.rootNamed && s.GroupID != t.rootGroup:
		return t.bad(s, "group_id", "root-group members (parent_id \"\") disagree: group_id %q, earlier %q", s.GroupID, t.rootGroup)
	case s.ParentID == "" && s.GroupID != "" && t.known(s.GroupID):
		return t.bad(s, "group_id", "root group id %q is also a node id", s.GroupID)
	case t.rootNamed && s.ParentID == t.rootGroup:
		return t.bad(s, "parent_id", "parent_id %q is the root group's id, not a node", s.ParentID)
	case s.ParentID != "" && s.GroupID != "" && s.GroupID != s.ParentID:
		return t.bad(s, "group_id", "group_id %q is not the parent node %q", s.GroupID, s.ParentID)
	case s.NodeID == s.ParentID:
		return t.bad(s, "node_id", "node is its own parent")
	case t.rootNamed && s.NodeID == t.rootGroup:
		return t.bad(s, "node_id", "node id %q is the root group's id", s.NodeID)
	case s.ParentID == "" && s.NodeID == s.GroupID:
		return t.bad(s, "node_id", "node id %q is its own group's id", s.NodeID)
	}
	return nil
}

// checkFields verifies s's group size, turns, children requested, reward
// and route.
func (t *Tree) checkFields(s *topics.Sample) error {
	switch {
	case s.GroupSize < 1:
		return t.bad(s, "group_size", "must be >= 1, got %d", s.GroupSize)
	case s.Turn < 1:
		return t.bad(s, "turn", "must be >= 1, got %d", s.Turn)
	case s.MaxTurns < s.Turn:
		return t.bad(s, "max_turns", "max_turns %d < turn %d", s.MaxTurns, s.Turn)
	case s.ChildrenRequested < 0:
		return t.bad(s, "children_requested", "negative")
	case s.ChildrenRequested > 0 && s.Turn >= s.MaxTurns:
		return t.bad(s, "children_requested", "%d children requested at the last turn %d", s.ChildrenRequested, s.Turn)
	case math.IsNaN(s.Reward) || math.IsInf(s.Reward, 0):
		return t.bad(s, "reward", "not finite")
	}
	switch s.Route {
	case topics.RouteTrain, topics.RouteMasked, topics.RouteLastStepPenalty:
		return nil
	default:
		return t.bad(s, "route", "unknown route %q", s.Route)
	}
}

// checkTurn verifies s's turn: 1 in the root group, its group's turn, and
// one less than its children's.
func (t *Tree) checkTurn(s *topics.Sample, self, parent ref, parentOK bool) error {
	if s.ParentID == "" && s.Turn != 1 {
		return t.bad(s, "turn", "a root-group member has turn %d, want 1", s.Turn)
	}
	if parentOK && parent.group >= 0 {
		if g := &t.groups[parent.group]; g.turn != 0 && g.turn != s.Turn {
			return t.bad(s, "turn", "turn %d, but group %q is at turn %d", s.Turn, s.GroupID, g.turn)
		}
	}
	if self.group >= 0 {
		if c := &t.groups[self.group]; c.turn != 0 && c.turn != s.Turn+1 {
			return t.bad(s, "turn", "turn %d, but its children are at turn %d", s.Turn, c.turn)
		}
	}
	return nil
}

// Add adds s (the tree keeps the pointer). It returns false, nil for a
// duplicate node id, and a *SampleError when s contradicts the tree's
// structure; the tree is unchanged in both cases.
func (t *Tree) Add(s *topics.Sample) (bool, error) {
	self, seen := t.ids[s.NodeID]
	if seen && self.node >= 0 {
		return false, nil
	}
	if !seen {
		self = ref{node: -1, group: -1}
	}
	var parent ref
	var parentOK bool
	if s.ParentID == "" {
		parent, parentOK = ref{node: -1, group: 0}, true
	} else {
		parent, parentOK = t.ids[s.ParentID]
	}
	if err := t.check(s, self, parent, parentOK); err != nil {
		return false, err
	}
	if s.ParentID == "" && s.GroupID != "" && !t.rootNamed {
		t.rootGroup, t.rootNamed = s.GroupID, true
		t.groups[0].id = s.GroupID
	}
	idx := int32(len(t.nodes))
	if t.taskID == "" {
		t.taskID = s.TaskID
	}
	if idx == 0 {
		t.reserve(s)
	}

	if !parentOK {
		parent = ref{node: -1, group: -1}
	}
	gi := parent.group
	if gi < 0 {
		gi = int32(len(t.groups))
		t.groups = append(t.groups, group{id: s.ParentID, parent: -1, turn: s.Turn, members: make([]int32, 0, s.GroupSize)})
		parent.group = gi
		t.ids[s.ParentID] = parent
		t.deficit++ // its parent node has not arrived
	}
	g := &t.groups[gi]
	before := t.groupDeficit(g)
	g.turn = s.Turn
	g.members = append(g.members, idx)
	if s.GroupSize > g.expected {
		g.expected = s.GroupSize
	}
	t.deficit += t.groupDeficit(g) - before

	child := self.group
	if child < 0 && s.ChildrenRequested > 0 {
		child = int32(len(t.groups))
		t.groups = append(t.groups, group{id: s.NodeID, parent: -1, turn: s.Turn + 1, members: make([]int32, 0, s.ChildrenRequested)})
		t.deficit++ // counted as parentless until linked below
	}
	if child >= 0 {
		c := &t.groups[child]
		before := t.groupDeficit(c)
		c.parent = idx
		c.turn = s.Turn + 1
		if s.ChildrenRequested > c.expected {
			c.expected = s.ChildrenRequested
		}
		t.deficit += t.groupDeficit(c) - before
	}
	t.nodes = append(t.nodes, node{s: s, group: gi, child: child})
	t.ids[s.NodeID] = ref{node: idx, group: child}
	return true, nil
}

// reserve sizes the tree for the largest tree s's spec allows, up to a
// bound, so that assembly does not regrow its tables.
func (t *Tree) reserve(s *topics.Sample) {
	const bound = 256
	est, width := 0, 1
	for turn := 1; turn <= s.MaxTurns && est < bound; turn++ {
		width *= max(1, s.TreeSpec.GroupSizeAt(turn))
		est += width
	}
	est = min(est, bound)
	if est <= cap(t.nodes) {
		return
	}
	t.nodes = make([]node, 0, est)
	ids := make(map[string]ref, est+est/4)
	for k, v := range t.ids {
		ids[k] = v
	}
	t.ids = ids
}

// Missing describes, for humans, what an incomplete tree still waits for.
func (t *Tree) Missing() string {
	if t.Complete() {
		return ""
	}
	var parts []string
	idx := make([]int, len(t.groups))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return t.groups[idx[a]].id < t.groups[idx[b]].id })
	n := 0
	for _, i := range idx {
		g := &t.groups[i]
		if t.groupDeficit(g) == 0 {
			continue
		}
		n++
		if n > 3 {
			continue
		}
		var why []string
		if len(g.members) < g.expected {
			why = append(why, fmt.Sprintf("%d of %d members", len(g.members), g.expected))
		}
		if g.parent < 0 && !g.root {
			why = append(why, "parent node missing")
		}
		name := "group " + g.id
		if g.root {
			name = "root group"
		}
		parts = append(parts, name+": "+strings.Join(why, ", "))
	}
	if n > 3 {
		parts = append(parts, fmt.Sprintf("and %d more groups", n-3))
	}
	return strings.Join(parts, "; ")
}
