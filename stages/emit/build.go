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
	id := r.BatchID()
	c := newBatchCols(id, trees, sc)
	rows := 0
	for _, st := range trees {
		t := st.Tree
		for i := range t.Samples {
			c.add(id, r.Partition, st.Offset, t, &t.Samples[i], v, emittedAt)
			rows++
		}
	}
	cols := c.arrays(mem, v)
	md := arrow.NewMetadata([]string{MetaBatchID}, []string{id})
	rec := array.NewRecordBatchWithMetadata(s, cols, int64(rows), md)
	for _, col := range cols {
		col.Release()
	}
	return rec
}

// batchCols are the columns of one batch being built, in schema order.
type batchCols struct {
	batchID  *strCol
	srcPart  []int32
	srcOff   []int64
	treeID   *strCol
	taskID   *strCol
	nodeID   *strCol
	parentID *strCol
	groupID  *strCol
	turn     []int32
	maxTurns []int32
	gsize    []int32
	sidx     []int32
	children []int32
	promptT  *listCol[int32]
	respT    *listCol[int32]
	logprobs *listCol[float32]
	weights  *listCol[float32]
	stepEnds *listCol[int32]
	stepSc   *listCol[float32]
	promptS  *strCol
	respS    *strCol
	reward   []float64
	credited []float64
	adv      []float64
	route    []int32
	cause    []int32
	status   []int32
	finish   []int32
	inStats  []bool
	passed   []int32
	total    []int32
	policy   *strCol
	pver     []int64
	incompl  []bool
	pruned   []int32
	genAt    []time.Time
	execAt   []time.Time
	govAt    []time.Time
	credAt   []time.Time
	emitAt   []time.Time
}

// newBatchCols sizes the columns for trees (sc: buffers reused across
// batches).
func newBatchCols(id string, trees []sourcedTree, sc *scratch) *batchCols {
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
	return &batchCols{
		batchID:  newStrCol(rows, rows*len(id)),
		srcPart:  make([]int32, 0, rows),
		srcOff:   make([]int64, 0, rows),
		treeID:   newStrCol(rows, 0),
		taskID:   newStrCol(rows, 0),
		nodeID:   newStrCol(rows, 0),
		parentID: newStrCol(rows, 0),
		groupID:  newStrCol(rows, 0),
		turn:     make([]int32, 0, rows),
		maxTurns: make([]int32, 0, rows),
		gsize:    make([]int32, 0, rows),
		sidx:     make([]int32, 0, rows),
		children: make([]int32, 0, rows),
		promptT:  newListCol(rows, prompt, &sc.prompt),
		respT:    newListCol(rows, resp, &sc.response),
		logprobs: newListCol(rows, resp, &sc.logprobs),
		weights:  newListCol(rows, resp, &sc.weight),
		stepEnds: newListCol[int32](rows, 0, nil),
		stepSc:   newListCol[float32](rows, 0, nil),
		promptS:  newStrCol(rows, 0),
		respS:    newStrCol(rows, text),
		reward:   make([]float64, 0, rows),
		credited: make([]float64, 0, rows),
		adv:      make([]float64, 0, rows),
		route:    make([]int32, 0, rows),
		cause:    make([]int32, 0, rows),
		status:   make([]int32, 0, rows),
		finish:   make([]int32, 0, rows),
		inStats:  make([]bool, 0, rows),
		passed:   make([]int32, 0, rows),
		total:    make([]int32, 0, rows),
		policy:   newStrCol(rows, 0),
		pver:     make([]int64, 0, rows),
		incompl:  make([]bool, 0, rows),
		pruned:   make([]int32, 0, rows),
		genAt:    make([]time.Time, 0, rows),
		execAt:   make([]time.Time, 0, rows),
		govAt:    make([]time.Time, 0, rows),
		credAt:   make([]time.Time, 0, rows),
		emitAt:   make([]time.Time, 0, rows),
	}
}

// add appends one row: sample smp of tree t, read at offset off of
// partition part.
func (c *batchCols) add(id string, part int, off int64, t *topics.CreditedTree, smp *topics.CreditedSample, v *vocabs, emittedAt time.Time) {
	c.batchID.add(id)
	c.srcPart = append(c.srcPart, int32(part))
	c.srcOff = append(c.srcOff, off)
	c.treeID.add(smp.TreeID)
	c.taskID.add(smp.TaskID)
	c.nodeID.add(smp.NodeID)
	c.parentID.add(smp.ParentID)
	c.groupID.add(smp.GroupID)
	c.turn = append(c.turn, int32(smp.Turn))
	c.maxTurns = append(c.maxTurns, int32(smp.MaxTurns))
	c.gsize = append(c.gsize, int32(smp.GroupSize))
	c.sidx = append(c.sidx, int32(smp.Index))
	c.children = append(c.children, int32(smp.ChildrenRequested))
	c.promptT.add(smp.PromptTokenIDs)
	c.respT.add(smp.ResponseTokenIDs)
	c.logprobs.add(smp.ResponseLogprobs)
	c.weights.add(smp.LossWeights)
	c.stepEnds.addInts(smp.StepEnds)
	c.stepSc.add(smp.StepScores)
	c.promptS.add(smp.PromptText)
	c.respS.add(smp.ResponseText)
	c.reward = append(c.reward, smp.Reward)
	c.credited = append(c.credited, smp.CreditedReward)
	c.adv = append(c.adv, smp.Advantage)
	c.route = append(c.route, v.route.id(smp.Route))
	c.cause = append(c.cause, v.cause.id(smp.FailureCause))
	c.status = append(c.status, v.status.id(smp.Status))
	c.finish = append(c.finish, v.finish.id(smp.FinishReason))
	c.inStats = append(c.inStats, smp.InGroupStats)
	c.passed = append(c.passed, int32(smp.TestsPassed))
	c.total = append(c.total, int32(smp.TestsTotal))
	c.policy.add(smp.Policy)
	c.pver = append(c.pver, smp.PolicyVersion)
	c.incompl = append(c.incompl, t.Incomplete)
	c.pruned = append(c.pruned, int32(t.PrunedNodes))
	c.genAt = append(c.genAt, smp.GeneratedAt)
	c.execAt = append(c.execAt, smp.ExecutedAt)
	c.govAt = append(c.govAt, smp.GovernedAt)
	c.credAt = append(c.credAt, t.CreditedAt)
	c.emitAt = append(c.emitAt, emittedAt)
}

// arrays builds the batch's column arrays.
func (c *batchCols) arrays(mem memory.Allocator, v *vocabs) []arrow.Array {
	i32, f32 := arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float32
	return []arrow.Array{
		c.batchID.array(),
		primitive(i32, c.srcPart),
		primitive(arrow.PrimitiveTypes.Int64, c.srcOff),
		c.treeID.array(), c.taskID.array(), c.nodeID.array(), c.parentID.array(), c.groupID.array(),
		primitive(i32, c.turn), primitive(i32, c.maxTurns), primitive(i32, c.gsize), primitive(i32, c.sidx), primitive(i32, c.children),
		c.promptT.array(i32), c.respT.array(i32), c.logprobs.array(f32),
		c.promptS.array(), c.respS.array(),
		primitive(arrow.PrimitiveTypes.Float64, c.reward),
		primitive(arrow.PrimitiveTypes.Float64, c.credited),
		primitive(arrow.PrimitiveTypes.Float64, c.adv),
		c.weights.array(f32), c.stepEnds.array(i32), c.stepSc.array(f32),
		dictionary(c.route, v.route), dictionary(c.cause, v.cause), dictionary(c.status, v.status), dictionary(c.finish, v.finish),
		booleans(mem, c.inStats),
		primitive(i32, c.passed), primitive(i32, c.total),
		c.policy.array(),
		primitive(arrow.PrimitiveTypes.Int64, c.pver),
		booleans(mem, c.incompl),
		primitive(i32, c.pruned),
		timestamps(mem, c.genAt), timestamps(mem, c.execAt), timestamps(mem, c.govAt), timestamps(mem, c.credAt), timestamps(mem, c.emitAt),
	}
}
