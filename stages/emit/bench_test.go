package emit

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/murphy-rl/murphy/topics"
)

// benchTrees is one realistic batch: 64 trees of 8 responses, 512 prompt
// and 1024 response tokens each, with logprobs and loss weights.
func benchTrees() []sourcedTree {
	rng := rand.New(rand.NewPCG(1, 2))
	trees := make([]topics.CreditedTree, 64)
	for i := range trees {
		t := &trees[i]
		t.SchemaVersion, t.TreeID, t.TaskID, t.Config = topics.SchemaVersion, fmt.Sprintf("run/task/%d", i), "task", testCreditConfig()
		for j := 0; j < 8; j++ {
			var s topics.CreditedSample
			s.TreeID, s.TaskID, s.NodeID, s.GroupID = t.TreeID, t.TaskID, fmt.Sprintf("n%d-%d", i, j), "r"
			s.PromptTokenIDs = ints(rng, 512)
			s.ResponseTokenIDs = ints(rng, 1024)
			s.ResponseLogprobs = floats(rng, 1024, -5, 0)
			s.LossWeights = floats(rng, 1024, 0, 1)
			s.PromptText, s.ResponseText = "def f(x):", "    return x"
			s.Route, s.Status, s.FinishReason = topics.RouteTrain, topics.StatusPassed, "stop"
			t.Samples = append(t.Samples, s)
		}
	}
	return treesAt(0, trees)
}

// copyTokens is the baseline: a plain memory copy of the same token bytes.
func copyTokens(dst []byte, trees []sourcedTree) []byte {
	dst = dst[:0]
	for _, st := range trees {
		for i := range st.Tree.Samples {
			s := &st.Tree.Samples[i]
			dst = append(dst, arrow.GetBytes(s.PromptTokenIDs)...)
			dst = append(dst, arrow.GetBytes(s.ResponseTokenIDs)...)
			dst = append(dst, arrow.GetBytes(s.ResponseLogprobs)...)
			dst = append(dst, arrow.GetBytes(s.LossWeights)...)
		}
	}
	return dst
}

// BenchmarkEncode reports MB/s of token data turned into one Arrow IPC
// stream (build + encode, as the topic sink does) against a plain memory
// copy of the same bytes. Both run in every iteration, interleaved, so that
// the ratio holds even on a busy machine.
func BenchmarkEncode(b *testing.B) {
	trees := benchTrees()
	total := 0
	for _, st := range trees {
		total += tokenBytes(st.Tree)
	}
	schema, err := NewSchema(testCreditConfig())
	if err != nil {
		b.Fatal(err)
	}
	r := Range{Topic: "t.credited", First: 0, Last: int64(len(trees) - 1)}
	for _, codec := range []string{CompressionNone, CompressionZstd, CompressionLZ4} {
		b.Run(codec, func(b *testing.B) {
			buf := make([]byte, 0, total)
			sc := &scratch{}
			var copyTime, encTime time.Duration
			size := 0
			var out []byte
			for b.Loop() {
				t0 := time.Now()
				buf = copyTokens(buf, trees)
				t1 := time.Now()
				rec := buildBatch(memory.DefaultAllocator, schema, r, trees, newVocabs(), time.Unix(0, 0), sc)
				var err error
				out, err = EncodeStream(memory.DefaultAllocator, rec, codec, out)
				rec.Release()
				if err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				copyTime += t1.Sub(t0)
				encTime += t2.Sub(t1)
				size = len(out)
			}
			mb := float64(total) * float64(b.N) / 1e6
			b.ReportMetric(mb/encTime.Seconds(), "encode_MB/s")
			b.ReportMetric(mb/copyTime.Seconds(), "memcpy_MB/s")
			b.ReportMetric(copyTime.Seconds()/encTime.Seconds(), "x_memcpy")
			b.ReportMetric(float64(size)/float64(total), "out/token_bytes")
		})
	}
}
