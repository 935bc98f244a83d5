package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// TestTableLatestValueBoundedCache: the table returns the latest value per
// key, reads evicted values back from Kafka (concurrent lookups too), waits for keys published just
// before the lookup, and reports unknown keys as ErrNotFound.
func TestTableLatestValueBoundedCache(t *testing.T) {
	brokers := pipelinetest.Embedded(t)
	cat := pipelinetest.Catalog(t, brokers, 3)
	topic := cat.Topic(topics.Tasks)
	var outs []pipeline.Out
	for i := 0; i < 20; i++ {
		outs = append(outs, pipeline.Out{Topic: topic, Key: fmt.Sprintf("task-%d", i), Value: []byte(fmt.Sprintf("v1-%d", i))})
	}
	outs = append(outs, pipeline.Out{Topic: topic, Key: "task-3", Value: []byte("v2-3")})
	pipelinetest.Produce(t, brokers, outs...)

	tab := pipeline.NewTable(pipelinetest.Kafka(brokers), topic, 4) // holds 4 values
	defer tab.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for round := 0; round < 2; round++ { // the second round reads evicted values back
		for i := 0; i < 20; i++ {
			want := fmt.Sprintf("v1-%d", i)
			if i == 3 {
				want = "v2-3"
			}
			got, err := tab.Get(ctx, fmt.Sprintf("task-%d", i))
			if err != nil || string(got) != want {
				t.Fatalf("round %d: Get(task-%d) = %q, %v; want %q", round, i, got, err, want)
			}
		}
	}
	// Concurrent lookups of evicted values (read back once per key and
	// flight) all get the right value.
	errs := make(chan error, 40)
	for g := 0; g < 40; g++ {
		go func(i int) {
			got, err := tab.Get(ctx, fmt.Sprintf("task-%d", i))
			if err == nil && string(got) != fmt.Sprintf("v1-%d", i) {
				err = fmt.Errorf("Get(task-%d) = %q", i, got)
			}
			errs <- err
		}(4 + g%8)
	}
	for g := 0; g < 40; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A key published just before the lookup is found without sleeping.
	pipelinetest.Produce(t, brokers, pipeline.Out{Topic: topic, Key: "late", Value: []byte("here")})
	if got, err := tab.Get(ctx, "late"); err != nil || string(got) != "here" {
		t.Fatalf("Get(late) = %q, %v", got, err)
	}
	if _, err := tab.Get(ctx, "never"); !errors.Is(err, pipeline.ErrNotFound) {
		t.Fatalf("Get(never) error = %v, want ErrNotFound", err)
	}
}
