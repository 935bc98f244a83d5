package emit

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	json "github.com/goccy/go-json"

	"github.com/murphy-rl/murphy/topics"
)

// SchemaVersion is the version of the Arrow schema of emitted batches
// (documented in SCHEMA.md). Any change to the columns bumps it; readers
// refuse versions they do not know.
const SchemaVersion = 1

// Schema metadata keys.
const (
	// MetaSchemaVersion holds SchemaVersion.
	MetaSchemaVersion = "murphy.schema_version"
	// MetaRecordSchemaVersion holds topics.SchemaVersion of the credited
	// records the batch was built from.
	MetaRecordSchemaVersion = "murphy.record_schema_version"
	// MetaCreditConfig holds the credit and pruning configuration
	// (topics.CreditConfig) as JSON.
	MetaCreditConfig = "murphy.credit_config"
	// MetaBatchID is per-batch (IPC message) metadata holding the batch id.
	MetaBatchID = "murphy.batch_id"
	// MetaBatchIDs is Parquet file metadata: the batch ids of the file's row
	// groups, comma separated, in order.
	MetaBatchIDs = "murphy.batch_ids"
)

// Column names. One row per response (tree node).
const (
	ColBatchID           = "batch_id"
	ColSourcePartition   = "source_partition"
	ColSourceOffset      = "source_offset"
	ColTreeID            = "tree_id"
	ColTaskID            = "task_id"
	ColNodeID            = "node_id"
	ColParentID          = "parent_id"
	ColGroupID           = "group_id"
	ColTurn              = "turn"
	ColMaxTurns          = "max_turns"
	ColGroupSize         = "group_size"
	ColSampleIndex       = "sample_index"
	ColChildrenRequested = "children_requested"
	ColPromptTokenIDs    = "prompt_token_ids"
	ColResponseTokenIDs  = "response_token_ids"
	ColResponseLogprobs  = "response_logprobs"
	ColPromptText        = "prompt_text"
	ColResponseText      = "response_text"
	ColReward            = "reward"
	ColCreditedReward    = "credited_reward"
	ColAdvantage         = "advantage"
	ColLossWeights       = "loss_weights"
	ColStepEnds          = "step_ends"
	ColStepScores        = "step_scores"
	ColRoute             = "route"
	ColFailureCause      = "failure_cause"
	ColStatus            = "status"
	ColFinishReason      = "finish_reason"
	ColInGroupStats      = "in_group_stats"
	ColTestsPassed       = "tests_passed"
	ColTestsTotal        = "tests_total"
	ColPolicy            = "policy"
	ColPolicyVersion     = "policy_version"
	ColIncomplete        = "incomplete"
	ColPrunedNodes       = "pruned_nodes"
	ColGeneratedAt       = "generated_at"
	ColExecutedAt        = "executed_at"
	ColGovernedAt        = "governed_at"
	ColCreditedAt        = "credited_at"
	ColEmittedAt         = "emitted_at"
)

// dictType is the type of the low-cardinality string columns.
func dictType() *arrow.DictionaryType {
	return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
}

func timestampType() arrow.DataType {
	return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
}

// Fields returns the columns of schema version SchemaVersion, in order.
func Fields() []arrow.Field {
	str := arrow.BinaryTypes.String
	i32 := arrow.PrimitiveTypes.Int32
	i64 := arrow.PrimitiveTypes.Int64
	f64 := arrow.PrimitiveTypes.Float64
	boolean := arrow.FixedWidthTypes.Boolean
	listI32 := arrow.ListOf(arrow.PrimitiveTypes.Int32)
	listF32 := arrow.ListOf(arrow.PrimitiveTypes.Float32)
	ts := timestampType()
	f := func(name string, t arrow.DataType, nullable bool) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: nullable}
	}
	return []arrow.Field{
		f(ColBatchID, str, false),
		f(ColSourcePartition, i32, false),
		f(ColSourceOffset, i64, false),
		f(ColTreeID, str, false),
		f(ColTaskID, str, false),
		f(ColNodeID, str, false),
		f(ColParentID, str, false),
		f(ColGroupID, str, false),
		f(ColTurn, i32, false),
		f(ColMaxTurns, i32, false),
		f(ColGroupSize, i32, false),
		f(ColSampleIndex, i32, false),
		f(ColChildrenRequested, i32, false),
		f(ColPromptTokenIDs, listI32, false),
		f(ColResponseTokenIDs, listI32, false),
		f(ColResponseLogprobs, listF32, false),
		f(ColPromptText, str, false),
		f(ColResponseText, str, false),
		f(ColReward, f64, false),
		f(ColCreditedReward, f64, false),
		f(ColAdvantage, f64, false),
		f(ColLossWeights, listF32, false),
		f(ColStepEnds, listI32, false),
		f(ColStepScores, listF32, false),
		f(ColRoute, dictType(), false),
		f(ColFailureCause, dictType(), false),
		f(ColStatus, dictType(), false),
		f(ColFinishReason, dictType(), false),
		f(ColInGroupStats, boolean, false),
		f(ColTestsPassed, i32, false),
		f(ColTestsTotal, i32, false),
		f(ColPolicy, str, false),
		f(ColPolicyVersion, i64, false),
		f(ColIncomplete, boolean, false),
		f(ColPrunedNodes, i32, false),
		f(ColGeneratedAt, ts, true),
		f(ColExecutedAt, ts, true),
		f(ColGovernedAt, ts, true),
		f(ColCreditedAt, ts, true),
		f(ColEmittedAt, ts, false),
	}
}

// NewSchema returns the batch schema carrying cfg in its metadata.
func NewSchema(cfg topics.CreditConfig) (*arrow.Schema, error) {
	cj, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("emit: encode credit config: %w", err)
	}
	md := arrow.NewMetadata(
		[]string{MetaSchemaVersion, MetaRecordSchemaVersion, MetaCreditConfig},
		[]string{strconv.Itoa(SchemaVersion), strconv.Itoa(topics.SchemaVersion), string(cj)},
	)
	return arrow.NewSchema(Fields(), &md), nil
}

// SchemaError says why a schema is not one this build reads.
type SchemaError struct {
	Reason string
}

func (e *SchemaError) Error() string { return "emit: unsupported batch schema: " + e.Reason }

// CheckSchema verifies that s is a batch schema of version SchemaVersion
// and returns the credit configuration it carries.
func CheckSchema(s *arrow.Schema) (topics.CreditConfig, error) {
	var cfg topics.CreditConfig
	md := s.Metadata()
	v, ok := md.GetValue(MetaSchemaVersion)
	if !ok {
		return cfg, &SchemaError{Reason: "no " + MetaSchemaVersion + " metadata"}
	}
	if v != strconv.Itoa(SchemaVersion) {
		return cfg, &SchemaError{Reason: fmt.Sprintf("schema version %s, this build reads %d", v, SchemaVersion)}
	}
	want := Fields()
	if s.NumFields() != len(want) {
		return cfg, &SchemaError{Reason: fmt.Sprintf("%d columns, want %d", s.NumFields(), len(want))}
	}
	for i, f := range want {
		got := s.Field(i)
		if got.Name != f.Name || !arrow.TypeEqual(got.Type, f.Type) {
			return cfg, &SchemaError{Reason: fmt.Sprintf("column %d is %s %s, want %s %s", i, got.Name, got.Type, f.Name, f.Type)}
		}
	}
	cj, ok := md.GetValue(MetaCreditConfig)
	if !ok {
		return cfg, &SchemaError{Reason: "no " + MetaCreditConfig + " metadata"}
	}
	if err := json.Unmarshal([]byte(cj), &cfg); err != nil {
		return cfg, &SchemaError{Reason: "credit config: " + err.Error()}
	}
	return cfg, nil
}
