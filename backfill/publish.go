package backfill

import (
	"context"
	"fmt"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/tasks/submit"
	"github.com/murphy-rl/murphy/topics"
)

// Publishing one item exactly once across crashes (BACKFILL.md, "Publish"):
//
//  1. record the intent: the end offsets of the tasks and backfill-prompts
//     topics, per partition, in the item's state (phase publishing);
//  2. produce the item's tasks, then one root prompt per tree, with
//     acks=all, waiting for the acknowledgements;
//  3. record the item as published.
//
// A job that stops anywhere in 2 or before 3 finds the item publishing when
// it resumes: it reads both topics from the intent's offsets to their ends,
// collects the keys of this item's records already there, and produces only
// the others. Records before the intent cannot be the item's: nothing of it
// was produced before the intent was on disk.

// publishTopics are the topics an item writes, in the order written.
var publishTopics = []topics.Name{topics.Tasks, topics.BackfillPrompts}

// endOffsets returns the high watermark of every partition of topic.
func endOffsets(ctx context.Context, kc pipeline.KafkaConfig, topic string) ([]int64, error) {
	n, err := pipeline.Partitions(ctx, kc, topic)
	if err != nil {
		return nil, err
	}
	ends := make([]int64, n)
	for p := range ends {
		if _, ends[p], err = pipeline.PartitionBounds(ctx, kc, topic, p); err != nil {
			return nil, err
		}
	}
	return ends, nil
}

// intent records where the topics end now.
func (j *job) intent(ctx context.Context) (map[string][]int64, error) {
	out := map[string][]int64{}
	for _, n := range publishTopics {
		topic := j.cfg.Catalog.Topic(n)
		ends, err := endOffsets(ctx, j.cfg.Kafka, topic)
		if err != nil {
			return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
		}
		out[topic] = ends
	}
	return out, nil
}

// present reads each topic from the intent's offsets to its end and
// returns the keys found among want (topic → keys).
func (j *job) present(ctx context.Context, intent map[string][]int64, want map[string]map[string]bool) (map[string]map[string]bool, error) {
	found := map[string]map[string]bool{}
	for topic, keys := range want {
		found[topic] = map[string]bool{}
		if len(keys) == 0 {
			continue
		}
		ends, err := endOffsets(ctx, j.cfg.Kafka, topic)
		if err != nil {
			return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
		}
		from := intent[topic]
		for p, end := range ends {
			start := int64(0)
			if p < len(from) {
				start = from[p]
			}
			if start >= end {
				continue
			}
			err := pipeline.ReadRange(ctx, j.cfg.Kafka, topic, p, start, end, func(r pipeline.Record) error {
				if k := string(r.Key); keys[k] {
					found[topic][k] = true
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("read back %s/%d: %w", topic, p, err)
			}
		}
	}
	return found, nil
}

// publish publishes st's tasks and trees once. tasks are the item's tasks
// to publish (those of its result not published by another item).
func (j *job) publish(ctx context.Context, st *itemState, tasks []topics.Task) (published, found int, err error) {
	taskTopic, promptTopic := j.cfg.Catalog.Topic(topics.Tasks), j.cfg.Catalog.Topic(topics.BackfillPrompts)
	var already map[string]map[string]bool
	if st.Phase == PhasePublishing {
		// Resumed: what of this item is on the broker since the intent?
		want := map[string]map[string]bool{taskTopic: {}, promptTopic: {}}
		for _, id := range st.TaskIDs {
			want[taskTopic][id] = true
		}
		for _, tr := range st.Trees {
			want[promptTopic][tr] = true
		}
		if already, err = j.present(ctx, st.Intent, want); err != nil {
			return 0, 0, err
		}
	} else {
		st.TaskIDs, st.Trees = nil, nil
		for _, t := range tasks {
			st.TaskIDs = append(st.TaskIDs, t.TaskID)
			for k := range j.cfg.Submit.TreesPerTask {
				st.Trees = append(st.Trees, topics.TreeID(j.cfg.Submit.RunID, t.TaskID, k))
			}
		}
		if st.Intent, err = j.intent(ctx); err != nil {
			return 0, 0, err
		}
		st.Phase = PhasePublishing
		if err := j.state.writeItem(st); err != nil {
			return 0, 0, err
		}
	}
	st.Attempts++
	if err := j.hook(HookIntent, st.Key); err != nil {
		return 0, 0, err
	}
	// Only the tasks the intent named: a rebuilt result cannot add others.
	named := map[string]bool{}
	for _, id := range st.TaskIDs {
		named[id] = true
	}
	var todo []topics.Task
	for _, t := range tasks {
		if named[t.TaskID] {
			todo = append(todo, t)
		}
	}
	rep, err := submit.Publish(ctx, j.prod, j.cfg.Catalog, j.cfg.Submit, todo, 0,
		submit.PromptsTo(topics.BackfillPrompts),
		submit.SkipPublished(func(topic, key string) bool { return already[topic][key] }))
	if err != nil {
		return 0, 0, err
	}
	if len(rep.Skipped) > 0 {
		// Tasks that do not encode: the builder's bug, reported, not
		// published (they are not in Trees' count either).
		for _, e := range rep.Skipped {
			j.warn(st, fmt.Errorf("task not published: %w", e))
		}
	}
	if err := j.hook(HookProduced, st.Key); err != nil {
		return 0, 0, err
	}
	return rep.Trees, rep.AlreadyTrees, nil
}
