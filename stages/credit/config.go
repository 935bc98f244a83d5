package credit

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/murphy-rl/murphy/topics"
)

// Propagation strategies.
const (
	StrategyMARS = "mars" // max reward: r~(v) = max(r(v), max over children of r~)
	StrategyMERS = "mers" // mean reward: r~(v) = r(v) + γ·mean over children of r~ / Z(v)
	// StrategyGRPOMT is the multi-turn GRPO baseline: every root-to-leaf
	// chain is one trajectory rewarded by its leaf, normalised among the
	// tree's chains; a node gets the mean over the chains through it.
	StrategyGRPOMT = "grpo-mt"
)

// Strategies lists the propagation strategies (a fresh slice).
func Strategies() []string { return []string{StrategyMARS, StrategyMERS, StrategyGRPOMT} }

// Normalisers Z(v) of MERS.
const (
	ZOne            = "1"
	ZRemainingTurns = "remaining_turns" // T − t(v) + 1
	ZOnePlusGamma   = "one_plus_gamma"  // 1 + γ
)

// Advantage modes.
const (
	AdvantageStd         = "std"           // (r~ − mean) / (std + ε)
	AdvantageNoStd       = "no_std"        // r~ − mean (Dr. GRPO)
	AdvantageLeaveOneOut = "leave_one_out" // r~ − mean of the other counting members
)

// Pruning passes.
const (
	PruneIntrap = "intrap"
	PruneInterp = "interp"
)

// Handling of trees that never complete (stuck online, or incomplete at the
// end of an offline input).
const (
	IncompleteDrop = "drop" // counted and reported, not written
	IncompleteFlag = "flag" // credited over what arrived and written with incomplete=true
)

// Config configures the credit stage: the credit method (which travels with
// every credited tree) and the stateful runtime around it.
type Config struct {
	// Strategy is the reward propagation: mars, mers, or the grpo-mt
	// baseline (chains of the tree rewarded by their leaf).
	Strategy string `yaml:"strategy"`
	// Gamma is the MERS discount γ >= 0 (unused by MARS).
	Gamma float64 `yaml:"gamma"`
	// Z is the MERS normaliser: 1, remaining_turns (T − t(v) + 1) or one_plus_gamma (1 + γ).
	Z string `yaml:"z"`
	// Advantage is the group advantage: std, no_std or leave_one_out.
	Advantage string `yaml:"advantage"`
	// Epsilon is added to the group std in the std mode.
	Epsilon float64 `yaml:"epsilon"`
	// UnbiasedStd uses the sample std (divided by n−1, as torch.std and
	// TRL-style trainers do) instead of the population std in the std mode.
	UnbiasedStd bool `yaml:"unbiased_std"`
	// PruneOrder lists the pruning passes in the order they run (intrap,
	// interp). Empty means every enabled pass in the order intrap, interp.
	PruneOrder []string `yaml:"prune_order"`
	// IntrapK keeps the k members of each group with the largest reward
	// variance among themselves (0 = off).
	IntrapK int `yaml:"intrap_k"`
	// InterpM keeps the m refinement groups of a tree with the largest
	// within-group reward variance; the root group is always kept (0 = no
	// count limit).
	InterpM int `yaml:"interp_m"`
	// InterpThreshold keeps only refinement groups whose within-group reward
	// variance is at least this value (0 = no threshold).
	InterpThreshold float64 `yaml:"interp_threshold"`
	// DropZeroSignal drops the members of groups whose advantages are all zero.
	DropZeroSignal bool `yaml:"drop_zero_signal"`

	// Deadline closes a tree that has not completed this long after its first
	// sample arrived (stuck: a child never arrives).
	Deadline time.Duration `yaml:"deadline"`
	// Incomplete says what happens to a stuck tree: drop (default, not
	// trained on) or flag (written with incomplete=true).
	Incomplete string `yaml:"incomplete"`
	// MaxOpenTrees caps the open trees per partition; at the cap the partition
	// waits until a tree completes or reaches its deadline.
	MaxOpenTrees int `yaml:"max_open_trees"`
	// MaxTreeNodes caps the samples of one tree; further samples are dead-lettered.
	MaxTreeNodes int `yaml:"max_tree_nodes"`
	// LookbackMargin is how many samples-partition offsets before the
	// committed offset the emitted-tree memory reaches back, so that late
	// duplicates of recently emitted trees are recognised after a restart too.
	LookbackMargin int64 `yaml:"lookback_margin"`
	// LookbackMaxRecords bounds how many credited records are read back on
	// partition assignment.
	LookbackMaxRecords int `yaml:"lookback_max_records"`
	// MaxRemembered bounds the emitted tree ids remembered per partition.
	MaxRemembered int `yaml:"max_remembered"`
	// TickInterval is how often stuck trees are looked for.
	TickInterval time.Duration `yaml:"tick_interval"`
}

// DefaultConfig is MARS with standard GRPO advantages, no pruning, and a
// ten-minute deadline.
func DefaultConfig() Config {
	return Config{
		Strategy:           StrategyMARS,
		Gamma:              1,
		Z:                  ZOne,
		Advantage:          AdvantageStd,
		Epsilon:            1e-6,
		Deadline:           10 * time.Minute,
		Incomplete:         IncompleteDrop,
		MaxOpenTrees:       10000,
		MaxTreeNodes:       100000,
		LookbackMargin:     100000,
		LookbackMaxRecords: 1000000,
		MaxRemembered:      1 << 20,
		TickInterval:       time.Second,
	}
}

// Validate checks the whole configuration.
func (c Config) Validate() error {
	if err := ValidateCreditConfig(c.CreditConfig()); err != nil {
		return err
	}
	switch c.Incomplete {
	case IncompleteDrop, IncompleteFlag:
	default:
		return fmt.Errorf("credit: incomplete must be %s or %s, got %q", IncompleteDrop, IncompleteFlag, c.Incomplete)
	}
	if c.Deadline <= 0 {
		return fmt.Errorf("credit: deadline must be > 0, got %s", c.Deadline)
	}
	if c.MaxOpenTrees < 1 {
		return fmt.Errorf("credit: max_open_trees must be >= 1, got %d", c.MaxOpenTrees)
	}
	if c.MaxTreeNodes < 1 {
		return fmt.Errorf("credit: max_tree_nodes must be >= 1, got %d", c.MaxTreeNodes)
	}
	if c.LookbackMargin < 0 {
		return fmt.Errorf("credit: lookback_margin must be >= 0, got %d", c.LookbackMargin)
	}
	if c.LookbackMaxRecords < 1 {
		return fmt.Errorf("credit: lookback_max_records must be >= 1, got %d", c.LookbackMaxRecords)
	}
	if c.MaxRemembered < 1 {
		return fmt.Errorf("credit: max_remembered must be >= 1, got %d", c.MaxRemembered)
	}
	if c.TickInterval <= 0 {
		return fmt.Errorf("credit: tick_interval must be > 0, got %s", c.TickInterval)
	}
	return nil
}

// CreditConfig is the canonical credit configuration that travels with
// every credited tree: the prune order lists exactly the enabled passes.
func (c Config) CreditConfig() topics.CreditConfig {
	cc := topics.CreditConfig{
		Strategy:        c.Strategy,
		Gamma:           c.Gamma,
		Z:               c.Z,
		Advantage:       c.Advantage,
		Epsilon:         c.Epsilon,
		UnbiasedStd:     c.UnbiasedStd,
		IntrapK:         c.IntrapK,
		InterpM:         c.InterpM,
		InterpThreshold: c.InterpThreshold,
		DropZeroSignal:  c.DropZeroSignal,
	}
	order := c.PruneOrder
	if len(order) == 0 {
		order = []string{PruneIntrap, PruneInterp}
	}
	for _, p := range order {
		if (p == PruneIntrap && c.IntrapK > 0) || (p == PruneInterp && (c.InterpM > 0 || c.InterpThreshold > 0)) {
			cc.PruneOrder = append(cc.PruneOrder, p)
		} else if p != PruneIntrap && p != PruneInterp {
			cc.PruneOrder = append(cc.PruneOrder, p) // kept so that Validate reports it
		}
	}
	return cc
}

// ValidateCreditConfig checks a credit configuration, e.g. one read back
// from a credited tree.
func ValidateCreditConfig(c topics.CreditConfig) error {
	var errs []error
	switch c.Strategy {
	case StrategyMARS, StrategyMERS, StrategyGRPOMT:
	default:
		errs = append(errs, fmt.Errorf("strategy must be %s, %s or %s, got %q", StrategyMARS, StrategyMERS, StrategyGRPOMT, c.Strategy))
	}
	if math.IsNaN(c.Gamma) || math.IsInf(c.Gamma, 0) || c.Gamma < 0 {
		errs = append(errs, fmt.Errorf("gamma must be a finite number >= 0, got %v", c.Gamma))
	}
	switch c.Z {
	case ZOne, ZRemainingTurns, ZOnePlusGamma:
	default:
		errs = append(errs, fmt.Errorf("z must be %s, %s or %s, got %q", ZOne, ZRemainingTurns, ZOnePlusGamma, c.Z))
	}
	switch c.Advantage {
	case AdvantageStd, AdvantageNoStd, AdvantageLeaveOneOut:
	default:
		errs = append(errs, fmt.Errorf("advantage must be %s, %s or %s, got %q", AdvantageStd, AdvantageNoStd, AdvantageLeaveOneOut, c.Advantage))
	}
	if math.IsNaN(c.Epsilon) || math.IsInf(c.Epsilon, 0) || c.Epsilon < 0 {
		errs = append(errs, fmt.Errorf("epsilon must be a finite number >= 0, got %v", c.Epsilon))
	}
	if c.UnbiasedStd && c.Advantage != AdvantageStd {
		errs = append(errs, fmt.Errorf("unbiased_std needs advantage %s, got %q", AdvantageStd, c.Advantage))
	}
	if c.Advantage == AdvantageStd && c.Epsilon == 0 {
		errs = append(errs, errors.New("epsilon must be > 0 with advantage std"))
	}
	if c.IntrapK < 0 {
		errs = append(errs, fmt.Errorf("intrap_k must be >= 0, got %d", c.IntrapK))
	}
	if c.InterpM < 0 {
		errs = append(errs, fmt.Errorf("interp_m must be >= 0, got %d", c.InterpM))
	}
	if math.IsNaN(c.InterpThreshold) || math.IsInf(c.InterpThreshold, 0) || c.InterpThreshold < 0 {
		errs = append(errs, fmt.Errorf("interp_threshold must be a finite number >= 0, got %v", c.InterpThreshold))
	}
	seen := map[string]bool{}
	for _, p := range c.PruneOrder {
		switch p {
		case PruneIntrap, PruneInterp:
		default:
			errs = append(errs, fmt.Errorf("prune_order: unknown pass %q (want %s or %s)", p, PruneIntrap, PruneInterp))
		}
		if seen[p] {
			errs = append(errs, fmt.Errorf("prune_order: pass %q listed twice", p))
		}
		seen[p] = true
	}
	if c.IntrapK > 0 && !seen[PruneIntrap] {
		errs = append(errs, fmt.Errorf("intrap_k is %d but prune_order %v lacks %s", c.IntrapK, c.PruneOrder, PruneIntrap))
	}
	if (c.InterpM > 0 || c.InterpThreshold > 0) && !seen[PruneInterp] {
		errs = append(errs, fmt.Errorf("interp is enabled but prune_order %v lacks %s", c.PruneOrder, PruneInterp))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("credit config: %w", err)
	}
	return nil
}
