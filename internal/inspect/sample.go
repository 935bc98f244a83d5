// Package inspect turns credited rollout trees (the Arrow files that emit
// writes, or the credited topic) into one self-contained HTML page: every
// tree drawn as a tree, nodes coloured by reward, credited reward or
// advantage, members that pruning (or a zero-signal drop) removed shown as
// faded placeholders, each node's prompt, response, feedback and line diff to
// its parent's response, and per run the reward and credited-reward
// histograms per turn and the credit that flowed to failed nodes.
//
// The page needs no network: its CSS and JavaScript are inline, the data is
// one JSON document in a <script type="application/json"> element, and the
// script writes every data string with textContent (never as markup), so
// model output cannot inject anything into the page.
package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/murphy-rl/murphy/internal/dataset"
	"github.com/murphy-rl/murphy/stages/emit"
	"github.com/murphy-rl/murphy/topics"
)

// Sample is one credited response: the columns of an emitted row (or the
// fields of a topics.CreditedSample) that the page shows.
type Sample struct {
	TreeID            string
	TaskID            string
	NodeID            string
	ParentID          string // "" for the root group
	GroupID           string
	Turn              int
	MaxTurns          int
	GroupSize         int
	SampleIndex       int
	ChildrenRequested int
	Reward            float64
	CreditedReward    float64
	Advantage         float64
	Route             string
	FailureCause      string
	Status            string
	FinishReason      string
	InGroupStats      bool
	TestsPassed       int
	TestsTotal        int
	Policy            string
	PolicyVersion     int64
	PromptText        string
	ResponseText      string
	// Feedback is the executor feedback; the credited topic carries it, the
	// Arrow columns do not (a child's refinement prompt quotes it).
	Feedback       string
	ResponseTokens int
	Incomplete     bool
	PrunedNodes    int
}

// Input is what a page is built from: samples of any number of trees, in any
// order, and the credit configurations they were credited under.
type Input struct {
	// Source says where the samples came from (a directory, a topic).
	Source  string
	Samples []Sample
	// Configs are the distinct credit configurations seen (file metadata or
	// the credited records); empty when unknown.
	Configs []topics.CreditConfig
	// Skipped counts records that could not be read (e.g. a malformed
	// record on the topic); Notes says why.
	Skipped int
	Notes   []string
}

// ReadDir reads the batch files that emit wrote to dir (Arrow IPC, else
// Parquet; dataset.Files). A missing directory, one without batch files, a
// file of another schema version or a row without the columns the page
// needs is an error naming the file.
func ReadDir(dir string) (*Input, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("inspect: %s is not a directory (give the output directory of murphy run or the emit stage)", dir)
	}
	files, err := dataset.Files(dir)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("inspect: no batch files (*.arrow or *.parquet) in %s", dir)
	}
	in := &Input{Source: dir}
	for _, f := range files {
		cfg, err := fileConfig(f)
		if err != nil {
			return nil, fmt.Errorf("inspect: %s: %w", filepath.Base(f), err)
		}
		in.addConfig(cfg)
		rows, err := dataset.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("inspect: %w", err)
		}
		for i, r := range rows {
			s, err := FromRow(r)
			if err != nil {
				return nil, fmt.Errorf("inspect: %s: row %d: %w", filepath.Base(f), i, err)
			}
			in.Samples = append(in.Samples, s)
		}
	}
	return in, nil
}

// fileConfig checks the schema of one batch file and returns its credit
// configuration (emit.CheckSchema).
func fileConfig(path string) (topics.CreditConfig, error) {
	var schema *arrow.Schema
	if strings.HasSuffix(path, ".parquet") {
		f, err := file.OpenParquetFile(path, false)
		if err != nil {
			return topics.CreditConfig{}, err
		}
		defer f.Close()
		fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			return topics.CreditConfig{}, err
		}
		if schema, err = fr.Schema(); err != nil {
			return topics.CreditConfig{}, err
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return topics.CreditConfig{}, err
		}
		defer f.Close()
		r, err := ipc.NewFileReader(f)
		if err != nil {
			return topics.CreditConfig{}, fmt.Errorf("not an Arrow IPC file: %w", err)
		}
		defer r.Close()
		schema = r.Schema()
	}
	return emit.CheckSchema(schema)
}

func (in *Input) addConfig(cfg topics.CreditConfig) {
	b, _ := json.Marshal(cfg)
	for _, c := range in.Configs {
		if cb, _ := json.Marshal(c); string(cb) == string(b) {
			return
		}
	}
	in.Configs = append(in.Configs, cfg)
}

// FromCredited adds the samples of credited trees (the credited topic's
// records) to in.
func (in *Input) FromCredited(t *topics.CreditedTree) {
	in.addConfig(t.Config)
	for i := range t.Samples {
		c := &t.Samples[i]
		in.Samples = append(in.Samples, Sample{
			TreeID: t.TreeID, TaskID: firstNonEmpty(c.TaskID, t.TaskID), NodeID: c.NodeID, ParentID: c.ParentID, GroupID: c.GroupID,
			Turn: c.Turn, MaxTurns: c.MaxTurns, GroupSize: c.GroupSize, SampleIndex: c.Index, ChildrenRequested: c.ChildrenRequested,
			Reward: c.Reward, CreditedReward: c.CreditedReward, Advantage: c.Advantage,
			Route: c.Route, FailureCause: c.FailureCause, Status: c.Status, FinishReason: c.FinishReason,
			InGroupStats: c.InGroupStats, TestsPassed: c.TestsPassed, TestsTotal: c.TestsTotal,
			Policy: c.Policy, PolicyVersion: c.PolicyVersion,
			PromptText: c.PromptText, ResponseText: c.ResponseText, Feedback: c.Feedback,
			ResponseTokens: len(c.ResponseTokenIDs), Incomplete: t.Incomplete, PrunedNodes: t.PrunedNodes,
		})
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// FromRow converts one emitted row (dataset.Row: column → JSON value) into
// a Sample. The identity and credit columns are required; the others
// default to their zero value when absent.
func FromRow(r dataset.Row) (Sample, error) {
	g := rowGetter{r: r}
	s := Sample{
		TreeID:            g.str("tree_id", true),
		TaskID:            g.str("task_id", false),
		NodeID:            g.str("node_id", true),
		ParentID:          g.str("parent_id", true),
		GroupID:           g.str("group_id", false),
		Turn:              g.int("turn", true),
		MaxTurns:          g.int("max_turns", false),
		GroupSize:         g.int("group_size", false),
		SampleIndex:       g.int("sample_index", false),
		ChildrenRequested: g.int("children_requested", false),
		Reward:            g.float("reward", true),
		CreditedReward:    g.float("credited_reward", true),
		Advantage:         g.float("advantage", true),
		Route:             g.str("route", true),
		FailureCause:      g.str("failure_cause", false),
		Status:            g.str("status", false),
		FinishReason:      g.str("finish_reason", false),
		InGroupStats:      g.bool("in_group_stats"),
		TestsPassed:       g.int("tests_passed", false),
		TestsTotal:        g.int("tests_total", false),
		Policy:            g.str("policy", false),
		PolicyVersion:     int64(g.int("policy_version", false)),
		PromptText:        g.str("prompt_text", false),
		ResponseText:      g.str("response_text", false),
		Feedback:          g.str("feedback", false),
		ResponseTokens:    g.len("response_token_ids"),
		Incomplete:        g.bool("incomplete"),
		PrunedNodes:       g.int("pruned_nodes", false),
	}
	if g.err != nil {
		return Sample{}, g.err
	}
	if s.NodeID == "" || s.TreeID == "" {
		return Sample{}, errors.New("empty tree_id or node_id")
	}
	return s, nil
}

// rowGetter reads typed values from a row, keeping the first error.
type rowGetter struct {
	r   dataset.Row
	err error
}

func (g *rowGetter) fail(col string, required bool, v any, ok bool) {
	if g.err != nil {
		return
	}
	if !ok && !required {
		return
	}
	if !ok {
		g.err = fmt.Errorf("no column %s", col)
		return
	}
	g.err = fmt.Errorf("column %s: unexpected value %v (%T)", col, v, v)
}

func (g *rowGetter) str(col string, required bool) string {
	v, ok := g.r[col]
	if s, isStr := v.(string); ok && isStr {
		return s
	}
	if ok && v == nil && !required {
		return ""
	}
	g.fail(col, required, v, ok)
	return ""
}

func (g *rowGetter) float(col string, required bool) float64 {
	v, ok := g.r[col]
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case string: // Arrow writes NaN and ±Inf as strings
		switch x {
		case "NaN":
			return math.NaN()
		case "+Inf", "Inf":
			return math.Inf(1)
		case "-Inf":
			return math.Inf(-1)
		}
	case nil:
		if ok && !required {
			return 0
		}
	}
	g.fail(col, required, v, ok)
	return 0
}

func (g *rowGetter) int(col string, required bool) int {
	v, ok := g.r[col]
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return int(n)
		}
	case float64:
		if x == math.Trunc(x) {
			return int(x)
		}
	case int:
		return x
	case int64:
		return int(x)
	case nil:
		if ok && !required {
			return 0
		}
	}
	g.fail(col, required, v, ok)
	return 0
}

func (g *rowGetter) bool(col string) bool {
	v, ok := g.r[col]
	b, isBool := v.(bool)
	if ok && v != nil && !isBool {
		g.fail(col, false, v, ok)
	}
	return b
}

func (g *rowGetter) len(col string) int {
	if l, ok := g.r[col].([]any); ok {
		return len(l)
	}
	return 0
}
