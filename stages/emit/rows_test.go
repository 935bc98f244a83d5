package emit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/murphy-rl/murphy/topics"
)

// row is one emitted row as plain values; JSON names are the column names
// (the cross-language test hands these to Python). Timestamps are
// microseconds since the epoch, nil for null.
type row struct {
	BatchID           string    `json:"batch_id"`
	SourcePartition   int32     `json:"source_partition"`
	SourceOffset      int64     `json:"source_offset"`
	TreeID            string    `json:"tree_id"`
	TaskID            string    `json:"task_id"`
	NodeID            string    `json:"node_id"`
	ParentID          string    `json:"parent_id"`
	GroupID           string    `json:"group_id"`
	Turn              int32     `json:"turn"`
	MaxTurns          int32     `json:"max_turns"`
	GroupSize         int32     `json:"group_size"`
	SampleIndex       int32     `json:"sample_index"`
	ChildrenRequested int32     `json:"children_requested"`
	PromptTokenIDs    []int32   `json:"prompt_token_ids"`
	ResponseTokenIDs  []int32   `json:"response_token_ids"`
	ResponseLogprobs  []float64 `json:"response_logprobs"`
	PromptText        string    `json:"prompt_text"`
	ResponseText      string    `json:"response_text"`
	Reward            float64   `json:"reward"`
	CreditedReward    float64   `json:"credited_reward"`
	Advantage         float64   `json:"advantage"`
	LossWeights       []float64 `json:"loss_weights"`
	StepEnds          []int32   `json:"step_ends"`
	StepScores        []float64 `json:"step_scores"`
	Route             string    `json:"route"`
	FailureCause      string    `json:"failure_cause"`
	Status            string    `json:"status"`
	FinishReason      string    `json:"finish_reason"`
	InGroupStats      bool      `json:"in_group_stats"`
	TestsPassed       int32     `json:"tests_passed"`
	TestsTotal        int32     `json:"tests_total"`
	Policy            string    `json:"policy"`
	PolicyVersion     int64     `json:"policy_version"`
	Incomplete        bool      `json:"incomplete"`
	PrunedNodes       int32     `json:"pruned_nodes"`
	GeneratedAt       *int64    `json:"generated_at"`
	ExecutedAt        *int64    `json:"executed_at"`
	GovernedAt        *int64    `json:"governed_at"`
	CreditedAt        *int64    `json:"credited_at"`
}

func micros(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMicro()
	return &v
}

func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func i32s(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

func nonNil(v []int32) []int32 {
	if v == nil {
		return []int32{}
	}
	return v
}

// expectedRows are the rows a batch covering r must hold for trees.
func expectedRows(r Range, trees []sourcedTree) []row {
	var out []row
	for _, st := range trees {
		t := st.Tree
		for _, s := range t.Samples {
			out = append(out, row{
				BatchID: r.BatchID(), SourcePartition: int32(r.Partition), SourceOffset: st.Offset,
				TreeID: s.TreeID, TaskID: s.TaskID, NodeID: s.NodeID, ParentID: s.ParentID, GroupID: s.GroupID,
				Turn: int32(s.Turn), MaxTurns: int32(s.MaxTurns), GroupSize: int32(s.GroupSize),
				SampleIndex: int32(s.Index), ChildrenRequested: int32(s.ChildrenRequested),
				PromptTokenIDs: nonNil(s.PromptTokenIDs), ResponseTokenIDs: nonNil(s.ResponseTokenIDs),
				ResponseLogprobs: f64s(s.ResponseLogprobs), PromptText: s.PromptText, ResponseText: s.ResponseText,
				Reward: s.Reward, CreditedReward: s.CreditedReward, Advantage: s.Advantage,
				LossWeights: f64s(s.LossWeights), StepEnds: i32s(s.StepEnds), StepScores: f64s(s.StepScores),
				Route: s.Route, FailureCause: s.FailureCause, Status: s.Status, FinishReason: s.FinishReason,
				InGroupStats: s.InGroupStats, TestsPassed: int32(s.TestsPassed), TestsTotal: int32(s.TestsTotal),
				Policy: s.Policy, PolicyVersion: s.PolicyVersion, Incomplete: t.Incomplete, PrunedNodes: int32(t.PrunedNodes),
				GeneratedAt: micros(s.GeneratedAt), ExecutedAt: micros(s.ExecutedAt), GovernedAt: micros(s.GovernedAt),
				CreditedAt: micros(t.CreditedAt),
			})
		}
	}
	return out
}

// readRows converts a record batch back to rows, checking its schema.
func readRows(t *testing.T, rec arrow.RecordBatch) []row {
	t.Helper()
	if _, err := CheckSchema(rec.Schema()); err != nil {
		t.Fatal(err)
	}
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("column %s missing", name)
		}
		return rec.Column(idx[0])
	}
	str := func(name string, i int) string {
		switch a := col(name).(type) {
		case *array.String:
			return a.Value(i)
		case *array.Dictionary:
			return a.Dictionary().(*array.String).Value(a.GetValueIndex(i))
		}
		t.Fatalf("column %s is %T", name, col(name))
		return ""
	}
	i32 := func(name string, i int) int32 { return col(name).(*array.Int32).Value(i) }
	i64 := func(name string, i int) int64 { return col(name).(*array.Int64).Value(i) }
	f64 := func(name string, i int) float64 { return col(name).(*array.Float64).Value(i) }
	boolean := func(name string, i int) bool { return col(name).(*array.Boolean).Value(i) }
	listI32 := func(name string, i int) []int32 {
		l := col(name).(*array.List)
		s, e := l.ValueOffsets(i)
		return nonNil(slices.Clone(l.ListValues().(*array.Int32).Int32Values()[s:e]))
	}
	listF := func(name string, i int) []float64 {
		l := col(name).(*array.List)
		s, e := l.ValueOffsets(i)
		return f64s(l.ListValues().(*array.Float32).Float32Values()[s:e])
	}
	ts := func(name string, i int) *int64 {
		a := col(name).(*array.Timestamp)
		if a.IsNull(i) {
			return nil
		}
		v := int64(a.Value(i))
		return &v
	}
	out := make([]row, rec.NumRows())
	for i := range out {
		out[i] = row{
			BatchID: str(ColBatchID, i), SourcePartition: i32(ColSourcePartition, i), SourceOffset: i64(ColSourceOffset, i),
			TreeID: str(ColTreeID, i), TaskID: str(ColTaskID, i), NodeID: str(ColNodeID, i),
			ParentID: str(ColParentID, i), GroupID: str(ColGroupID, i),
			Turn: i32(ColTurn, i), MaxTurns: i32(ColMaxTurns, i), GroupSize: i32(ColGroupSize, i),
			SampleIndex: i32(ColSampleIndex, i), ChildrenRequested: i32(ColChildrenRequested, i),
			PromptTokenIDs: listI32(ColPromptTokenIDs, i), ResponseTokenIDs: listI32(ColResponseTokenIDs, i),
			ResponseLogprobs: listF(ColResponseLogprobs, i), PromptText: str(ColPromptText, i), ResponseText: str(ColResponseText, i),
			Reward: f64(ColReward, i), CreditedReward: f64(ColCreditedReward, i), Advantage: f64(ColAdvantage, i),
			LossWeights: listF(ColLossWeights, i), StepEnds: listI32(ColStepEnds, i), StepScores: listF(ColStepScores, i),
			Route: str(ColRoute, i), FailureCause: str(ColFailureCause, i), Status: str(ColStatus, i), FinishReason: str(ColFinishReason, i),
			InGroupStats: boolean(ColInGroupStats, i), TestsPassed: i32(ColTestsPassed, i), TestsTotal: i32(ColTestsTotal, i),
			Policy: str(ColPolicy, i), PolicyVersion: i64(ColPolicyVersion, i), Incomplete: boolean(ColIncomplete, i),
			PrunedNodes: i32(ColPrunedNodes, i),
			GeneratedAt: ts(ColGeneratedAt, i), ExecutedAt: ts(ColExecutedAt, i), GovernedAt: ts(ColGovernedAt, i), CreditedAt: ts(ColCreditedAt, i),
		}
		if col(ColEmittedAt).IsNull(i) {
			t.Fatalf("row %d: emitted_at is null", i)
		}
	}
	return out
}

// readDir reads every complete file of dir (IPC and Parquet) and returns
// its rows per format, files in name (offset) order.
func readDir(t *testing.T, dir string) map[string][]row {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]row{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		_, format, ok := ParseFileName(e.Name())
		if !ok {
			t.Fatalf("unexpected file %s", e.Name())
		}
		out[format] = append(out[format], readFile(t, filepath.Join(dir, e.Name()))...)
	}
	return out
}

func readFile(t *testing.T, path string) []row {
	t.Helper()
	var rows []row
	if strings.HasSuffix(path, ".parquet") {
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 20}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Release()
		tr := array.NewTableReader(tbl, tbl.NumRows())
		defer tr.Release()
		sc, err := fr.Schema()
		if err != nil {
			t.Fatal(err)
		}
		for tr.Next() {
			rec := tr.RecordBatch()
			rows = append(rows, readRows(t, array.NewRecordBatch(sc, rec.Columns(), rec.NumRows()))...)
		}
		return rows
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, readRows(t, rec)...)
		rec.Release()
	}
	return rows
}

func treesAt(first int64, trees []topics.CreditedTree) []sourcedTree {
	out := make([]sourcedTree, len(trees))
	for i := range trees {
		out[i] = sourcedTree{Offset: first + int64(i), Tree: &trees[i]}
	}
	return out
}

func rowKey(r row) string { return fmt.Sprintf("%s/%s", r.TreeID, r.NodeID) }

func ipcFileSchema(f *os.File) (*arrow.Schema, error) {
	r, err := ipc.NewFileReader(f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Schema(), nil
}
