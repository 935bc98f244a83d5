package emit

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/murphy-rl/murphy/topics"
)

// sourcedTree is a credited tree with its position in the credited topic.
type sourcedTree struct {
	Offset int64
	Tree   *topics.CreditedTree
}

// vocab is the dictionary of one low-cardinality column. It only grows, so
// that consecutive batches of one partition share equal dictionaries once
// every value was seen (the Arrow IPC file format allows one dictionary per
// column and file).
type vocab struct {
	index  map[string]int32
	values []string
}

func newVocab(seed ...string) *vocab {
	v := &vocab{index: make(map[string]int32)}
	for _, s := range seed {
		v.id(s)
	}
	return v
}

func (v *vocab) id(s string) int32 {
	if i, ok := v.index[s]; ok {
		return i
	}
	i := int32(len(v.values))
	v.index[s] = i
	v.values = append(v.values, s)
	return i
}

// vocabs holds the dictionaries of one partition's batches.
type vocabs struct {
	route, cause, status, finish *vocab
}

// newVocabs seeds the dictionaries with the values the pipeline is known
// to produce (govern's failure-cause taxonomy, execution statuses, the
// usual finish reasons), so that files rarely rotate because a dictionary
// grew. Other values are added when first seen.
func newVocabs() *vocabs {
	statuses := []string{topics.StatusPassed, topics.StatusWrongAnswer, topics.StatusRuntimeError,
		topics.StatusCompileError, topics.StatusTimeout, topics.StatusMemory, topics.StatusOutputLimit,
		topics.StatusSandboxError, topics.StatusNotRun}
	causes := append([]string{"", topics.InfraInference, topics.InfraContextOverflow, "infra.sandbox",
		"infra.harness_timeout", "infra.not_run", "infra.judge", "infra.scorer", "infra.other",
		"degenerate.repetition", "degenerate.truncated", "degenerate.excessive_steps"}, statuses...)
	return &vocabs{
		route:  newVocab(topics.RouteTrain, topics.RouteMasked, topics.RouteLastStepPenalty),
		cause:  newVocab(causes...),
		status: newVocab(statuses...),
		finish: newVocab("stop", "length", ""),
	}
}

// rowBytes estimates the encoded size of a tree's rows: token data, text
// and a fixed per-row overhead. It drives the byte bound of a batch.
func rowBytes(t *topics.CreditedTree) int {
	n := 0
	for i := range t.Samples {
		s := &t.Samples[i]
		n += 4 * (len(s.PromptTokenIDs) + len(s.ResponseTokenIDs) + len(s.ResponseLogprobs) +
			len(s.LossWeights) + len(s.StepEnds) + len(s.StepScores) + 6)
		n += len(s.PromptText) + len(s.ResponseText) + len(s.TreeID) + len(s.TaskID) +
			len(s.NodeID) + len(s.ParentID) + len(s.GroupID) + len(s.Policy)
		n += 160
	}
	return n
}

// tokenBytes is the size of a tree's token data (ids, logprobs, weights) as
// 4-byte values: the payload the throughput benchmark reports.
func tokenBytes(t *topics.CreditedTree) int {
	n := 0
	for i := range t.Samples {
		s := &t.Samples[i]
		n += 4 * (len(s.PromptTokenIDs) + len(s.ResponseTokenIDs) + len(s.ResponseLogprobs) + len(s.LossWeights))
	}
	return n
}

// checkTree rejects a tree whose per-token columns cannot line up with its
// response tokens: a trainer would misalign weights or logprobs.
func checkTree(t *topics.CreditedTree) error {
	for i := range t.Samples {
		s := &t.Samples[i]
		n := len(s.ResponseTokenIDs)
		if l := len(s.ResponseLogprobs); l != 0 && l != n {
			return &topics.Error{Kind: topics.ErrInvalidField, Record: "credited_tree", Field: "samples.response_logprobs",
				Err: fmt.Errorf("node %s: %d logprobs for %d response tokens", s.NodeID, l, n)}
		}
		if l := len(s.LossWeights); l != 0 && l != n {
			return &topics.Error{Kind: topics.ErrInvalidField, Record: "credited_tree", Field: "samples.loss_weights",
				Err: fmt.Errorf("node %s: %d loss weights for %d response tokens", s.NodeID, l, n)}
		}
	}
	return nil
}

// listCol accumulates a list<T> column in flat buffers.
type listCol[T int32 | float32] struct {
	offsets []int32
	values  []T
}

func newListCol[T int32 | float32](rows, values int, reuse *[]T) *listCol[T] {
	c := &listCol[T]{offsets: make([]int32, 1, rows+1)}
	if reuse != nil && cap(*reuse) >= values {
		c.values = (*reuse)[:0]
	} else {
		c.values = make([]T, 0, values)
	}
	if reuse != nil {
		*reuse = c.values[:0]
	}
	return c
}

func (c *listCol[T]) add(v []T) {
	c.values = append(c.values, v...)
	c.offsets = append(c.offsets, int32(len(c.values)))
}

func (c *listCol[T]) addInts(v []int) {
	for _, x := range v {
		c.values = append(c.values, T(x))
	}
	c.offsets = append(c.offsets, int32(len(c.values)))
}

func (c *listCol[T]) array(elem arrow.DataType) arrow.Array {
	vals := array.NewData(elem, len(c.values),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.GetBytes(c.values))}, nil, 0, 0)
	defer vals.Release()
	list := array.NewData(arrow.ListOf(elem), len(c.offsets)-1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.GetBytes(c.offsets))}, []arrow.ArrayData{vals}, 0, 0)
	defer list.Release()
	return array.MakeFromData(list)
}

// strCol accumulates a utf8 column in flat buffers.
type strCol struct {
	offsets []int32
	data    []byte
}

func newStrCol(rows, bytes int) *strCol {
	return &strCol{offsets: make([]int32, 1, rows+1), data: make([]byte, 0, bytes)}
}

// scratch holds the value buffers of the token columns, reused by the next
// batch once the previous one was released (Go zeroes every new
// allocation, which costs as much as the copy itself). Only the processor's
// goroutine uses it.
type scratch struct {
	prompt, response []int32
	logprobs, weight []float32
}

func (c *strCol) add(s string) {
	c.data = append(c.data, s...)
	c.offsets = append(c.offsets, int32(len(c.data)))
}

func (c *strCol) array() arrow.Array {
	d := array.NewData(arrow.BinaryTypes.String, len(c.offsets)-1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.GetBytes(c.offsets)), memory.NewBufferBytes(c.data)}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

func primitive[T int32 | int64 | float64](t arrow.DataType, v []T) arrow.Array {
	d := array.NewData(t, len(v), []*memory.Buffer{nil, memory.NewBufferBytes(arrow.GetBytes(v))}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

func dictionary(idx []int32, v *vocab) arrow.Array {
	indices := primitive(arrow.PrimitiveTypes.Int32, idx)
	defer indices.Release()
	values := newStrCol(len(v.values), 0)
	for _, s := range v.values {
		values.add(s)
	}
	dict := values.array()
	defer dict.Release()
	return array.NewDictionaryArray(dictType(), indices, dict)
}

// timestamps builds a timestamp column; the zero time is null.
func timestamps(mem memory.Allocator, ts []time.Time) arrow.Array {
	b := array.NewTimestampBuilder(mem, timestampType().(*arrow.TimestampType))
	defer b.Release()
	b.Reserve(len(ts))
	for _, t := range ts {
		if t.IsZero() {
			b.AppendNull()
			continue
		}
		b.Append(arrow.Timestamp(t.UnixMicro()))
	}
	return b.NewArray()
}

func booleans(mem memory.Allocator, v []bool) arrow.Array {
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.AppendValues(v, nil)
	return b.NewArray()
}

// buildBatch turns the trees of one batch into an Arrow record batch with
// schema s, one row per credited sample, in tree then sample order. The
// caller releases the result.
//
// With sc, the token columns reuse sc's buffers: the result must be released
// before the next buildBatch with the same sc.
func buildBatch(mem memory.Allocator, s *arrow.Schema, r Range, trees []sourcedTree, v *vocabs, emittedAt time.Time, sc *scratch) arrow.RecordBatch {
	if sc == nil {
		sc = &scratch{}
	}
	rows, prompt, resp, text := 0, 0, 0, 0
	for _, st := range trees {
		for i := range st.Tree.Samples {
			smp := &st.Tree.Samples[i]
			rows++
			prompt += len(smp.PromptTokenIDs)
			resp += len(smp.ResponseTokenIDs)
			text += len(smp.PromptText) + len(smp.ResponseText)
		}
	}
	id := r.BatchID()
	var (
		batchID  = newStrCol(rows, rows*len(id))
		srcPart  = make([]int32, 0, rows)
		srcOff   = make([]int64, 0, rows)
		treeID   = newStrCol(rows, 0)
		taskID   = newStrCol(rows, 0)
		nodeID   = newStrCol(rows, 0)
		parentID = newStrCol(rows, 0)
		groupID  = newStrCol(rows, 0)
		turn     = make([]int32, 0, rows)
		maxTurns = make([]int32, 0, rows)
		gsize    = make([]int32, 0, rows)
		sidx     = make([]int32, 0, rows)
		children = make([]int32, 0, rows)
		promptT  = newListCol(rows, prompt, &sc.prompt)
		respT    = newListCol(rows, resp, &sc.response)
		logprobs = newListCol(rows, resp, &sc.logprobs)
		weights  = newListCol(rows, resp, &sc.weight)
		stepEnds = newListCol[int32](rows, 0, nil)
		stepSc   = newListCol[float32](rows, 0, nil)
		promptS  = newStrCol(rows, 0)
		respS    = newStrCol(rows, text)
		reward   = make([]float64, 0, rows)
		credited = make([]float64, 0, rows)
		adv      = make([]float64, 0, rows)
		route    = make([]int32, 0, rows)
		cause    = make([]int32, 0, rows)
		status   = make([]int32, 0, rows)
		finish   = make([]int32, 0, rows)
		inStats  = make([]bool, 0, rows)
		passed   = make([]int32, 0, rows)
		total    = make([]int32, 0, rows)
		policy   = newStrCol(rows, 0)
		pver     = make([]int64, 0, rows)
		incompl  = make([]bool, 0, rows)
		pruned   = make([]int32, 0, rows)
		genAt    = make([]time.Time, 0, rows)
		execAt   = make([]time.Time, 0, rows)
		govAt    = make([]time.Time, 0, rows)
		credAt   = make([]time.Time, 0, rows)
		emitAt   = make([]time.Time, 0, rows)
	)
	for _, st := range trees {
		t := st.Tree
		for i := range t.Samples {
			smp := &t.Samples[i]
			batchID.add(id)
			srcPart = append(srcPart, int32(r.Partition))
			srcOff = append(srcOff, st.Offset)
			treeID.add(smp.TreeID)
			taskID.add(smp.TaskID)
			nodeID.add(smp.NodeID)
			parentID.add(smp.ParentID)
			groupID.add(smp.GroupID)
			turn = append(turn, int32(smp.Turn))
			maxTurns = append(maxTurns, int32(smp.MaxTurns))
			gsize = append(gsize, int32(smp.GroupSize))
			sidx = append(sidx, int32(smp.Index))
			children = append(children, int32(smp.ChildrenRequested))
			promptT.add(smp.PromptTokenIDs)
			respT.add(smp.ResponseTokenIDs)
			logprobs.add(smp.ResponseLogprobs)
			weights.add(smp.LossWeights)
			stepEnds.addInts(smp.StepEnds)
			stepSc.add(smp.StepScores)
			promptS.add(smp.PromptText)
			respS.add(smp.ResponseText)
			reward = append(reward, smp.Reward)
			credited = append(credited, smp.CreditedReward)
			adv = append(adv, smp.Advantage)
			route = append(route, v.route.id(smp.Route))
			cause = append(cause, v.cause.id(smp.FailureCause))
			status = append(status, v.status.id(smp.Status))
			finish = append(finish, v.finish.id(smp.FinishReason))
			inStats = append(inStats, smp.InGroupStats)
			passed = append(passed, int32(smp.TestsPassed))
			total = append(total, int32(smp.TestsTotal))
			policy.add(smp.Policy)
			pver = append(pver, smp.PolicyVersion)
			incompl = append(incompl, t.Incomplete)
			pruned = append(pruned, int32(t.PrunedNodes))
			genAt = append(genAt, smp.GeneratedAt)
			execAt = append(execAt, smp.ExecutedAt)
			govAt = append(govAt, smp.GovernedAt)
			credAt = append(credAt, t.CreditedAt)
			emitAt = append(emitAt, emittedAt)
		}
	}
	i32, f32 := arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float32
	cols := []arrow.Array{
		batchID.array(),
		primitive(i32, srcPart),
		primitive(arrow.PrimitiveTypes.Int64, srcOff),
		treeID.array(), taskID.array(), nodeID.array(), parentID.array(), groupID.array(),
		primitive(i32, turn), primitive(i32, maxTurns), primitive(i32, gsize), primitive(i32, sidx), primitive(i32, children),
		promptT.array(i32), respT.array(i32), logprobs.array(f32),
		promptS.array(), respS.array(),
		primitive(arrow.PrimitiveTypes.Float64, reward),
		primitive(arrow.PrimitiveTypes.Float64, credited),
		primitive(arrow.PrimitiveTypes.Float64, adv),
		weights.array(f32), stepEnds.array(i32), stepSc.array(f32),
		dictionary(route, v.route), dictionary(cause, v.cause), dictionary(status, v.status), dictionary(finish, v.finish),
		booleans(mem, inStats),
		primitive(i32, passed), primitive(i32, total),
		policy.array(),
		primitive(arrow.PrimitiveTypes.Int64, pver),
		booleans(mem, incompl),
		primitive(i32, pruned),
		timestamps(mem, genAt), timestamps(mem, execAt), timestamps(mem, govAt), timestamps(mem, credAt), timestamps(mem, emitAt),
	}
	md := arrow.NewMetadata([]string{MetaBatchID}, []string{id})
	rec := array.NewRecordBatchWithMetadata(s, cols, int64(rows), md)
	for _, c := range cols {
		c.Release()
	}
	return rec
}
