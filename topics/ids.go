package topics

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Node ids are deterministic (DESIGN §3): a replayed prompt yields candidates
// with the same ids, so every downstream stage can drop duplicates by id.

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// RootID is the id of a tree's virtual root (the task itself). It is the
// group_id of the root group, whose members have parent_id "".
func RootID(treeID string) string { return "r" + digest("root", treeID) }

// NodeID derives the id of the index-th child sampled from parent.
// For the root group parent is RootID(treeID).
func NodeID(treeID, parent string, index int) string {
	return "n" + digest("node", treeID, parent, strconv.Itoa(index))
}

// TreeID names the k-th tree of task taskID in run runID.
func TreeID(runID, taskID string, k int) string {
	return runID + "/" + taskID + "/" + strconv.Itoa(k)
}

// ParentNode returns the node a group was sampled from: the group id, which
// for the root group is RootID(treeID).
func ParentNode(treeID, parentID string) string {
	if parentID == "" {
		return RootID(treeID)
	}
	return parentID
}
