package sandbox

import (
	"encoding/json"
	"sync"
)

// SharedBuilder is a Builder shared by every caller in this process that
// opened an equal configuration (OpenBuilder); Close releases this
// caller's share, and the last one closes the builder.
type SharedBuilder struct {
	*Builder
	key  string
	once sync.Once
}

var shared = struct {
	mu sync.Mutex
	m  map[string]*sharedEntry
}{m: map[string]*sharedEntry{}}

type sharedEntry struct {
	b    *Builder
	refs int
}

// OpenBuilder returns a builder for cfg, shared with the other callers of
// this process that opened an equal configuration. One process running
// several stages (murphy run: execute's evaluator, generate's episodes and
// govern's artifact judge) then keeps one set of build slots and one set of
// warmed caches (seeds) instead of three: a toolchain's caches are warmed
// once, and the builds of all three share the CPUs instead of
// oversubscribing them. Seeds are built only from trusted trees (Warm), so
// sharing them between the stages crosses no boundary a build job could
// use.
func OpenBuilder(cfg BuilderConfig) (*SharedBuilder, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	key := string(raw)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if e := shared.m[key]; e != nil {
		e.refs++
		return &SharedBuilder{Builder: e.b, key: key}, nil
	}
	b, err := NewBuilder(cfg)
	if err != nil {
		return nil, err
	}
	shared.m[key] = &sharedEntry{b: b, refs: 1}
	return &SharedBuilder{Builder: b, key: key}, nil
}

// Close releases this share; the last share closes the builder. Closing a
// share twice releases it once.
func (s *SharedBuilder) Close() error {
	var err error
	s.once.Do(func() {
		shared.mu.Lock()
		e := shared.m[s.key]
		last := e != nil && e.b == s.Builder && e.refs == 1
		switch {
		case last:
			delete(shared.m, s.key)
		case e != nil && e.b == s.Builder:
			e.refs--
		}
		shared.mu.Unlock()
		if last {
			err = s.Builder.Close()
		}
	})
	return err
}
