package policy

// Glue for agent episodes (package episode): an episode's OpenAI agent
// samples with this policy's client and settings.

// Config is the policy's configuration.
func (o *OpenAI) Config() OpenAIConfig { return o.cfg }

// EpisodeSeed is the seed of the episode of node nodeID: derived from
// (Seed, node id) as group seeds are, so a replayed node asks for the same
// turns; nil when the policy sends no seed (Seed 0).
func (o *OpenAI) EpisodeSeed(nodeID string) *int64 {
	if o.cfg.Seed == 0 {
		return nil
	}
	s := groupSeed(o.cfg.Seed, "episode/"+nodeID)
	return &s
}
