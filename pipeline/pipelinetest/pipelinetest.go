// Package pipelinetest holds test helpers for code that runs on Kafka: the
// real broker from MURPHY_KAFKA_BROKERS, an embedded broker, unique catalogs,
// and producing/reading records.
package pipelinetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/segmentio/kafka-go"
)

// EnvBrokers names the environment variable that points tests at a real broker.
const EnvBrokers = "MURPHY_KAFKA_BROKERS"

// Brokers returns the real broker's addresses, or skips the test when
// MURPHY_KAFKA_BROKERS is unset.
func Brokers(t testing.TB) []string {
	t.Helper()
	v := os.Getenv(EnvBrokers)
	if v == "" {
		t.Skipf("%s not set: no real Kafka broker for this test", EnvBrokers)
	}
	return strings.Split(v, ",")
}

// Embedded starts an in-process broker for the test and returns its addresses.
func Embedded(t testing.TB) []string {
	t.Helper()
	e, err := pipeline.StartEmbedded(pipeline.EmbeddedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e.Brokers()
}

// Kafka returns a KafkaConfig for brokers.
func Kafka(brokers []string) pipeline.KafkaConfig {
	c := pipeline.DefaultKafkaConfig()
	c.Brokers = brokers
	return c
}

var unsafe = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// Unique returns a name unique to this test run, safe for topics and groups.
func Unique(t testing.TB) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := unsafe.ReplaceAllString(t.Name(), "-")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return strings.ToLower(strings.Trim(name, "-")) + "-" + hex.EncodeToString(b)
}

// Catalog returns a catalog with a unique prefix and creates its topics.
func Catalog(t testing.TB, brokers []string, partitions int) topics.Catalog {
	t.Helper()
	cat := topics.Catalog{Prefix: Unique(t) + ".", Partitions: partitions}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := pipeline.EnsureTopics(ctx, Kafka(brokers), cat); err != nil {
		t.Fatal(err)
	}
	// Delete the topics afterwards, so that a long suite (or benchmark) on one
	// broker does not slow it down with thousands of idle partitions.
	t.Cleanup(func() {
		names := make([]string, 0, len(topics.All()))
		for _, n := range topics.All() {
			names = append(names, cat.Topic(n))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tr := Kafka(brokers).Transport()
		defer tr.CloseIdleConnections()
		client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
		_, _ = client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: names})
	})
	return cat
}

// Produce writes records synchronously.
func Produce(t testing.TB, brokers []string, outs ...pipeline.Out) {
	t.Helper()
	p := pipeline.NewProducer(Kafka(brokers))
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Produce(ctx, outs...); err != nil {
		t.Fatal(err)
	}
}

// ReadN reads at least n records of topic (all partitions, from the start)
// and fails the test when they do not arrive within timeout. It returns every
// record seen, which may be more than n.
func ReadN(t testing.TB, brokers []string, topic string, n int, timeout time.Duration) []pipeline.Record {
	t.Helper()
	recs, err := ReadAll(context.Background(), brokers, topic, n, timeout)
	if err != nil {
		t.Fatalf("read %s: got %d of %d records: %v", topic, len(recs), n, err)
	}
	return recs
}

// ReadAll reads topic from the start until n records were read or timeout,
// then returns what it has (and an error if fewer than n).
func ReadAll(ctx context.Context, brokers []string, topic string, n int, timeout time.Duration) ([]pipeline.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	recs := []pipeline.Record{}
	ch, err := pipeline.Tail(ctx, Kafka(brokers), topic)
	if err != nil {
		return nil, err
	}
	for len(recs) < n {
		select {
		case r, ok := <-ch:
			if !ok {
				return recs, ctx.Err()
			}
			recs = append(recs, r)
		case <-ctx.Done():
			return recs, ctx.Err()
		}
	}
	return recs, nil
}

// OnEachBroker runs fn as two subtests: on an embedded broker, and on the
// real broker ("kafka", skipped when MURPHY_KAFKA_BROKERS is unset).
func OnEachBroker(t *testing.T, fn func(t *testing.T, brokers []string)) {
	t.Helper()
	for _, b := range []struct {
		name    string
		brokers func(t testing.TB) []string
	}{{"embedded", Embedded}, {"kafka", Brokers}} {
		t.Run(b.name, func(t *testing.T) { fn(t, b.brokers(t)) })
	}
}

// VersionOut is policy version v (model "run-v<v>") as a record of cat's
// policy-versions topic, keyed as a trainer publishes it.
func VersionOut(t testing.TB, cat topics.Catalog, v int64) pipeline.Out {
	t.Helper()
	b, err := topics.Encode(&topics.PolicyVersion{SchemaVersion: topics.SchemaVersion, Version: v,
		Model: "run-v" + topics.PolicyVersionKey(v), CreatedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Out{Topic: cat.Topic(topics.PolicyVersions), Key: topics.PolicyVersionKey(v), Value: b}
}

// MetricsText is the text exposition of the metric families names gathered
// from g, in g's order.
func MetricsText(t testing.TB, g prometheus.Gatherer, names ...string) string {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fams {
		if slices.Contains(names, f.GetName()) {
			if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.String()
}
