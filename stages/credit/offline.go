package credit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/topics"
)

// OfflineOptions configures Offline.
type OfflineOptions struct {
	// Credit is the credit configuration (validated by Offline).
	Credit topics.CreditConfig
	// Incomplete says what to do with trees still incomplete at the end of
	// the input: IncompleteDrop (reported, not written) or IncompleteFlag
	// (credited over what arrived and written with "incomplete": true).
	Incomplete string
	// Log receives one line per incomplete tree (nil: discarded).
	Log io.Writer
	// Summaries, when set, each receive every written tree credited under
	// their own Config (validated by Offline), e.g. to compare strategies on
	// one sample set; credit under a config equal to Credit is reused.
	Summaries []*Summary
}

// OfflineReport summarises an Offline run.
type OfflineReport struct {
	Lines            int // non-blank input lines
	Duplicates       int // samples whose node id was already seen
	Trees            int // trees written complete
	IncompleteTrees  int // trees incomplete at the end of the input
	Written          int // credited samples written
	PrunedNodes      int
	ZeroSignalGroups int
	DroppedSamples   int // members of zero-signal groups left out
}

// OfflineLine is one line of the offline output: a credited sample with the
// credit configuration it was computed under and, for a tree written
// incomplete, the flag.
type OfflineLine struct {
	topics.CreditedSample
	Incomplete bool                `json:"incomplete,omitempty"`
	Config     topics.CreditConfig `json:"credit_config"`
}

// LineError is a rejected input line.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// offlineSample decodes a sample leniently: the fields credit needs are
// pointers (shadowing the embedded ones) so that a missing field is told
// apart from a zero value; everything else is optional.
type offlineSample struct {
	topics.Sample
	TreeID            *string  `json:"tree_id"`
	NodeID            *string  `json:"node_id"`
	ParentID          *string  `json:"parent_id"`
	GroupID           *string  `json:"group_id"`
	GroupSize         *int     `json:"group_size"`
	Turn              *int     `json:"turn"`
	MaxTurns          *int     `json:"max_turns"`
	Reward            *float64 `json:"reward"`
	Route             *string  `json:"route"`
	InGroupStats      *bool    `json:"in_group_stats"`
	ChildrenRequested *int     `json:"children_requested"`
}

// DecodeOfflineSample parses one offline input line. It requires tree_id,
// node_id, parent_id, group_id, group_size, turn, max_turns, reward, route,
// in_group_stats and children_requested, and nothing else.
func DecodeOfflineSample(b []byte) (*topics.Sample, error) {
	var in offlineSample
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("not a JSON sample: %w", err)
	}
	var missing []string
	need := func(name string, present bool) {
		if !present {
			missing = append(missing, name)
		}
	}
	need("tree_id", in.TreeID != nil)
	need("node_id", in.NodeID != nil)
	need("parent_id", in.ParentID != nil)
	need("group_id", in.GroupID != nil)
	need("group_size", in.GroupSize != nil)
	need("turn", in.Turn != nil)
	need("max_turns", in.MaxTurns != nil)
	need("reward", in.Reward != nil)
	need("route", in.Route != nil)
	need("in_group_stats", in.InGroupStats != nil)
	need("children_requested", in.ChildrenRequested != nil)
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	s := in.Sample
	s.TreeID, s.NodeID, s.ParentID, s.GroupID = *in.TreeID, *in.NodeID, *in.ParentID, *in.GroupID
	s.GroupSize, s.Turn, s.MaxTurns = *in.GroupSize, *in.Turn, *in.MaxTurns
	s.Reward, s.Route, s.InGroupStats, s.ChildrenRequested = *in.Reward, *in.Route, *in.InGroupStats, *in.ChildrenRequested
	if s.TreeID == "" {
		return nil, errors.New("empty tree_id")
	}
	if s.SchemaVersion == 0 {
		s.SchemaVersion = topics.SchemaVersion
	}
	return &s, nil
}

// Offline re-derives credit from stored samples: it reads sample records
// as JSON lines (any order, trees interleaved, duplicates allowed), credits
// each tree with the stage's core as soon as it is complete and writes one
// OfflineLine per surviving sample (nothing when out is nil). A malformed line stops the run with a
// *LineError naming it.
func Offline(ctx context.Context, in io.Reader, out io.Writer, opts OfflineOptions) (OfflineReport, error) {
	var rep OfflineReport
	if err := opts.validate(); err != nil {
		return rep, err
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	if out == nil {
		out = io.Discard
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	r := &offlineRun{opts: opts, rep: &rep, enc: json.NewEncoder(bw), open: map[string]*Tree{}, done: map[string]bool{}}

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), topics.MaxRecordBytes+1)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if rep.Lines%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
		}
		rep.Lines++
		if err := r.add(b, lineNo); err != nil {
			return rep, err
		}
	}
	if err := sc.Err(); err != nil {
		return rep, &LineError{Line: lineNo + 1, Err: err}
	}
	if err := r.closeIncomplete(logw); err != nil {
		return rep, err
	}
	if err := bw.Flush(); err != nil {
		return rep, fmt.Errorf("credit: write: %w", err)
	}
	return rep, nil
}

// validate checks the options' credit configs and incomplete policy.
func (opts OfflineOptions) validate() error {
	if err := ValidateCreditConfig(opts.Credit); err != nil {
		return err
	}
	for _, s := range opts.Summaries {
		if err := ValidateCreditConfig(s.Config); err != nil {
			return err
		}
	}
	switch opts.Incomplete {
	case IncompleteDrop, IncompleteFlag:
		return nil
	default:
		return fmt.Errorf("credit: incomplete must be %s or %s, got %q", IncompleteDrop, IncompleteFlag, opts.Incomplete)
	}
}

// offlineRun is Offline's trees: those still open, by first appearance,
// and those credited.
type offlineRun struct {
	opts  OfflineOptions
	rep   *OfflineReport
	enc   *json.Encoder
	open  map[string]*Tree
	order []string // open trees by first appearance
	done  map[string]bool
}

// add adds the sample of line lineNo (b) to its tree, and credits the
// tree when that completes it.
func (r *offlineRun) add(b []byte, lineNo int) error {
	rep := r.rep
	s, err := DecodeOfflineSample(b)
	if err != nil {
		return &LineError{Line: lineNo, Err: err}
	}
	if r.done[s.TreeID] {
		rep.Duplicates++
		return nil
	}
	t := r.open[s.TreeID]
	if t == nil {
		t = NewTree(s.TreeID)
		r.open[s.TreeID] = t
		r.order = append(r.order, s.TreeID)
	}
	added, err := t.Add(s)
	if err != nil {
		return &LineError{Line: lineNo, Err: err}
	}
	if !added {
		rep.Duplicates++
		return nil
	}
	if t.Complete() {
		if err := r.write(t); err != nil {
			return err
		}
		rep.Trees++
		delete(r.open, s.TreeID)
		r.done[s.TreeID] = true
	}
	return nil
}

// closeIncomplete reports the trees still open at the end of the input,
// and credits and writes them flagged when the options say so.
func (r *offlineRun) closeIncomplete(logw io.Writer) error {
	for _, id := range r.order {
		t := r.open[id]
		if t == nil {
			continue
		}
		r.rep.IncompleteTrees++
		action := "skipped"
		if r.opts.Incomplete == IncompleteFlag {
			action = "written flagged incomplete"
			if err := r.write(t); err != nil {
				return err
			}
		}
		fmt.Fprintf(logw, "credit: tree %s incomplete (%d samples; %s): %s\n", id, t.Len(), t.Missing(), action)
	}
	return nil
}

// write credits t, adds it to the summaries (each with its own config)
// and writes its credited samples.
func (r *offlineRun) write(t *Tree) error {
	opts, rep := r.opts, r.rep
	ct, st := Credit(t, opts.Credit)
	rep.PrunedNodes += st.PrunedNodes
	rep.ZeroSignalGroups += st.ZeroSignalGroups
	rep.DroppedSamples += st.DroppedSamples
	for _, sum := range opts.Summaries {
		if reflect.DeepEqual(sum.Config, opts.Credit) {
			sum.Add(&ct, t.Len())
			continue
		}
		other, _ := Credit(t, sum.Config)
		sum.Add(&other, t.Len())
	}
	for i := range ct.Samples {
		line := OfflineLine{CreditedSample: ct.Samples[i], Incomplete: ct.Incomplete, Config: ct.Config}
		if err := r.enc.Encode(&line); err != nil {
			return fmt.Errorf("credit: write tree %s: %w", t.ID(), err)
		}
		rep.Written++
	}
	return nil
}
