package pipeline_test

import (
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
