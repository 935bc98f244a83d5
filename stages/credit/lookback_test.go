package credit

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// testLookbackTail: the read-back of a credited partition returns exactly the
// trees whose maxpos is at or above from, oldest first, with the newest maxpos,
// and stops at the record bound.
func testLookbackTail(t *testing.T, brokers []string) {
	cat := pipelinetest.Catalog(t, brokers, 3)
	topic := cat.Topic(topics.Credited)
	var outs []pipeline.Out
	for i := range 700 {
		outs = append(outs, pipeline.Out{Topic: topic, Key: fmt.Sprintf("tree-%d", i), Value: []byte("{}"),
			Headers: map[string]string{HeaderMaxPos: strconv.Itoa(i)}})
	}
	pipelinetest.Produce(t, brokers, outs...)
	all := pipelinetest.ReadN(t, brokers, topic, len(outs), 60*time.Second)
	perPart := map[int][]int64{}
	for _, r := range all {
		mp, _ := strconv.ParseInt(r.Headers[HeaderMaxPos], 10, 64)
		perPart[r.Partition] = append(perPart[r.Partition], mp)
	}
	log := newKafkaLog(pipelinetest.Kafka(brokers))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if n, err := log.Partitions(ctx, topic); err != nil || n != 3 {
		t.Fatalf("partitions %d, %v", n, err)
	}
	for p, mps := range perPart {
		for _, from := range []int64{-1, 0, 350, 699, 700} {
			tl, err := log.Tail(ctx, topic, p, from, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			var want []int64
			for _, mp := range mps {
				if mp >= from {
					want = append(want, mp)
				}
			}
			if len(tl.trees) != len(want) || tl.truncated || tl.lastMaxPos != mps[len(mps)-1] {
				t.Fatalf("partition %d from %d: %d trees (truncated=%v, last %d), want %d (last %d)",
					p, from, len(tl.trees), tl.truncated, tl.lastMaxPos, len(want), mps[len(mps)-1])
			}
			for i, e := range tl.trees {
				if e.maxpos != want[i] || e.tree != fmt.Sprintf("tree-%d", want[i]) {
					t.Fatalf("partition %d from %d: entry %d = %+v, want maxpos %d", p, from, i, e, want[i])
				}
			}
		}
		tl, err := log.Tail(ctx, topic, p, 0, 10)
		if err != nil || !tl.truncated || tl.records != 10 || len(tl.trees) != 10 {
			t.Fatalf("bounded read: %+v, %v", tl, err)
		}
	}
}

func TestLookbackTailEmbedded(t *testing.T) { testLookbackTail(t, pipelinetest.Embedded(t)) }

func TestLookbackTailKafka(t *testing.T) { testLookbackTail(t, pipelinetest.Brokers(t)) }
