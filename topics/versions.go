package topics

import (
	"strconv"
	"strings"
	"time"
)

// PolicyVersion is one policy version a trainer published on the compacted
// policy-versions topic, keyed by PolicyVersionKey(Version). Versions are
// increasing; Model is the name requests for this version are sent with and
// is never reused by another version (a reused name can serve the old
// weights), so a server that answers with that name answers as this version.
type PolicyVersion struct {
	SchemaVersion int   `json:"schema_version"`
	Version       int64 `json:"version"`
	// Model is the served model (or LoRA adapter) name of this version.
	Model string `json:"model"`
	// Adapter is the LoRA adapter name when the version is an adapter over
	// a base model ("" for full weights); loading hooks register it.
	Adapter string `json:"adapter,omitempty"`
	// CheckpointURI locates the weights (a path or URL the servers can read).
	CheckpointURI string `json:"checkpoint_uri,omitempty"`
	// TrainerID names the trainer that published it.
	TrainerID string    `json:"trainer_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// PolicyVersionKey is the Kafka key of version v: the decimal number, so
// that compaction keeps every version once.
func PolicyVersionKey(v int64) string { return strconv.FormatInt(v, 10) }

// TrainerProgress is one trainer rank's progress, on the compacted
// trainer-progress topic keyed by TrainerProgressKey(TrainerID, Rank).
// Consumed maps a credited-topic partition to the next credited offset the
// rank has consumed up to (the batches' ranges, last+1); one credited record
// is one tree, so positions count trees on a common origin: the log.
type TrainerProgress struct {
	SchemaVersion int    `json:"schema_version"`
	TrainerID     string `json:"trainer_id"`
	Rank          int    `json:"rank"`
	// GroupID is the trainer's consumer group of the batches topic.
	GroupID string `json:"group_id,omitempty"`
	// PolicyVersion is the version the trainer trains now.
	PolicyVersion int64 `json:"policy_version"`
	// MaxStaleness is the trainer's bound η in versions; nil asks for no
	// bound (the trainer only reports).
	MaxStaleness *int `json:"max_staleness,omitempty"`
	// TreesPerVersion is how many trees the trainer consumes per version
	// (its optimizer step's batch, in trees); it converts trees to versions.
	TreesPerVersion int `json:"trees_per_version"`
	// Consumed: credited partition (decimal) → next credited offset consumed.
	Consumed map[string]int64 `json:"consumed"`
	// VersionStart is Consumed as it was when the trainer began training
	// PolicyVersion: the bound counts a version's trees from its start
	// (absent: from Consumed, which lets a tree arrive one version later).
	VersionStart map[string]int64 `json:"version_start,omitempty"`
	// TreesConsumed, RowsDropped and RowsTrainedStaleness are reported for
	// monitoring, cumulative since the rank's reader started.
	TreesConsumed int64 `json:"trees_consumed,omitempty"`
	// RowsDropped: reason (stale, duplicate_batch) → rows dropped.
	RowsDropped map[string]int64 `json:"rows_dropped,omitempty"`
	// RowsTrainedStaleness: staleness in versions (decimal, >= 0: the
	// trainer's PolicyVersion minus the row's policy_version when the
	// reader yielded it) → rows yielded to the trainer. Absent when the
	// reader does not know the trainer's version.
	RowsTrainedStaleness map[string]int64 `json:"rows_trained_staleness,omitempty"`
	UpdatedAt            time.Time        `json:"updated_at"`
}

// StalenessBuckets returns the upper bounds, in versions, of the staleness
// histograms murphy exports: emit's of the rows it writes and generate's of
// the rows each trainer trained (TrainerProgress.RowsTrainedStaleness), the
// same so that the two compare bucket by bucket.
func StalenessBuckets() []float64 { return []float64{0, 1, 2, 3, 4, 6, 8, 16, 32} }

// ParseStaleness parses a RowsTrainedStaleness key: a decimal number of
// versions >= 0.
func ParseStaleness(key string) (int64, error) {
	n, err := strconv.ParseUint(key, 10, 63)
	return int64(n), err
}

// TrainerProgressKey is the Kafka key of a trainer rank's progress.
func TrainerProgressKey(trainerID string, rank int) string {
	return trainerID + "/" + strconv.Itoa(rank)
}

// Admission is a generate process's proposal to start a tree under the
// staleness bound, on the admission log (partition 0 of the admissions
// topic, keyed by tree id), read back by every generate process. The
// proposal at offset o is granted iff it has no Headroom (no trainer bound
// it) or o − ReadTo < Headroom: the records between the proposer's read
// position and its own, which it could not count, are counted as granted.
// The decision depends on the record and its offset alone, so every
// process reaches the same one (stages/generate/VERSIONS.md). A record
// without Proposal (an older writer) is granted.
type Admission struct {
	SchemaVersion int    `json:"schema_version"`
	TreeID        string `json:"tree_id"`
	// PolicyVersion is the version the tree starts at (its root's).
	PolicyVersion int64  `json:"policy_version"`
	Instance      string `json:"instance,omitempty"`
	// Proposal identifies the proposal (unique per proposer), so that its
	// proposer finds it when it reads the log back.
	Proposal string `json:"proposal,omitempty"`
	// ReadTo is the proposer's read position on the admission log when it
	// counted: every record before it was counted.
	ReadTo int64 `json:"read_to,omitempty"`
	// Headroom is the trees the strictest bounded trainer still lets
	// start, as counted up to ReadTo (this tree not included); absent: no
	// trainer bounds.
	Headroom   *int64    `json:"headroom,omitempty"`
	AdmittedAt time.Time `json:"admitted_at"`
}

func (r *PolicyVersion) recordName() string   { return "policy_version" }
func (r *TrainerProgress) recordName() string { return "trainer_progress" }
func (r *Admission) recordName() string       { return "admission" }
func (r *PolicyVersion) version() int         { return r.SchemaVersion }
func (r *TrainerProgress) version() int       { return r.SchemaVersion }
func (r *Admission) version() int             { return r.SchemaVersion }
func (r *PolicyVersion) setVersion(v int)     { r.SchemaVersion = v }
func (r *TrainerProgress) setVersion(v int)   { r.SchemaVersion = v }
func (r *Admission) setVersion(v int)         { r.SchemaVersion = v }

// Validate implements Record.
func (r *PolicyVersion) Validate() error {
	const n = "policy_version"
	switch {
	case r.Version < 1:
		return invalid(n, "version", "must be >= 1, got %d", r.Version)
	case strings.TrimSpace(r.Model) == "":
		return missing(n, "model")
	}
	return nil
}

// Validate implements Record.
func (r *TrainerProgress) Validate() error {
	const n = "trainer_progress"
	switch {
	case r.TrainerID == "":
		return missing(n, "trainer_id")
	case r.Rank < 0:
		return invalid(n, "rank", "negative")
	case r.MaxStaleness != nil && *r.MaxStaleness < 0:
		return invalid(n, "max_staleness", "negative")
	case r.MaxStaleness != nil && r.TreesPerVersion < 1:
		return invalid(n, "trees_per_version", "a bounded trainer needs trees_per_version >= 1, got %d", r.TreesPerVersion)
	}
	for p, off := range r.Consumed {
		if _, err := strconv.Atoi(p); err != nil || off < 0 {
			return invalid(n, "consumed", "partition %q offset %d", p, off)
		}
	}
	for k, rows := range r.RowsTrainedStaleness {
		if _, err := ParseStaleness(k); err != nil || rows < 0 {
			return invalid(n, "rows_trained_staleness", "staleness %q rows %d: want a decimal number of versions >= 0 and rows >= 0", k, rows)
		}
	}
	return nil
}

// Validate implements Record.
func (r *Admission) Validate() error {
	if r.TreeID == "" {
		return missing("admission", "tree_id")
	}
	return nil
}
