package pipeline_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
)

func conformance(t *testing.T, brokers []string) {
	newPubSub := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		kc := pipelinetest.Kafka(brokers)
		// One partition per topic: the suite publishes without keys and
		// checks global order.
		pub, err := pipeline.NewPublisher(pipeline.PublisherConfig{Kafka: kc, CreatePartitions: 1})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := pipeline.NewSubscriber(pipeline.SubscriberConfig{
			Kafka: kc, ConsumerGroup: group, CreatePartitions: 1, NackResendSleep: 10 * time.Millisecond,
			MaxWait: 50 * time.Millisecond, SessionTimeout: 6 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		return pub, sub
	}
	tests.TestPubSub(t,
		tests.Features{
			ConsumerGroups:                   true,
			ExactlyOnceDelivery:              false,
			GuaranteedOrder:                  true,
			Persistent:                       true,
			NewSubscriberReceivesOldMessages: true,
			// The long variant subscribes 50 members of one group at once;
			// kafka-go's classic-protocol group then rebalances for minutes
			// on a 2-core machine. Every scenario still runs.
			ForceShort: true,
		},
		func(t *testing.T) (message.Publisher, message.Subscriber) {
			return newPubSub(t, "g-"+watermill.NewShortUUID())
		},
		func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
			return newPubSub(t, group)
		},
	)
}

func TestPubSubConformanceEmbedded(t *testing.T) {
	conformance(t, pipelinetest.Embedded(t))
}

func TestPubSubConformanceKafka(t *testing.T) {
	conformance(t, pipelinetest.Brokers(t))
}

// With a commit interval, acks between commits fold into the next commit,
// and closing commits what was acked at once: a new member of the group
// starts after the last acked message.
func TestCommitIntervalCommitsOnClose(t *testing.T) {
	brokers := pipelinetest.Embedded(t)
	kc := pipelinetest.Kafka(brokers)
	topic := pipelinetest.Unique(t)
	pub, err := pipeline.NewPublisher(pipeline.PublisherConfig{Kafka: kc, CreatePartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	const n = 50
	for i := range n {
		if err := pub.Publish(topic, message.NewMessage(strconv.Itoa(i), []byte(strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
	subscribe := func() (*pipeline.Subscriber, <-chan *message.Message) {
		sub, err := pipeline.NewSubscriber(pipeline.SubscriberConfig{Kafka: kc, ConsumerGroup: "g", MaxInFlight: 8,
			CommitInterval: time.Hour, MaxWait: 50 * time.Millisecond, SessionTimeout: 6 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ch, err := sub.Subscribe(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		return sub, ch
	}
	sub, ch := subscribe()
	for i := range n - 10 {
		select {
		case m := <-ch:
			m.Ack()
		case <-time.After(30 * time.Second):
			t.Fatalf("got %d of %d messages", i, n)
		}
	}
	start := time.Now()
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("close took %s", took)
	}
	sub, ch = subscribe()
	defer sub.Close()
	select {
	case m := <-ch:
		if got, _ := strconv.Atoi(string(m.Payload)); got != n-10 {
			t.Fatalf("a new member starts at %d: the acks before close were not committed", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing redelivered after close")
	}
}
