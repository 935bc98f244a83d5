package openai

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// PoolConfig configures a Pool of OpenAI-compatible servers serving the
// same model. The client settings (Config: model, key, timeout, retries,
// max_n, token ids...) apply to every server; Config.BaseURL is not used.
type PoolConfig struct {
	// Servers are the API roots of the servers, e.g.
	// "http://10.0.0.7:8000/v1". With ServersFile, the pool serves both.
	Servers []string `yaml:"servers"`
	// ServersFile names a file of API roots, one per line ('#' starts a
	// comment), read again when it changes (checked every
	// ServersFileInterval): servers are added and removed without a
	// restart. A removed server gets no new requests; those it has finish.
	ServersFile string `yaml:"servers_file"`
	// ServersFileInterval is how often ServersFile is checked for a change.
	ServersFileInterval time.Duration `yaml:"servers_file_interval"`
	// Limit configures each server's adaptive concurrency limit.
	Limit LimitConfig `yaml:"limit"`
	// UnhealthyAfter is the number of consecutive failed requests (5xx,
	// timeouts, connection errors) after which a server gets no requests
	// until a health check passes.
	UnhealthyAfter int `yaml:"unhealthy_after"`
	// HealthPath is the endpoint, relative to a server's API root, that
	// health checks GET (2xx = healthy); empty: no check, the server is
	// tried again with one request after the backoff.
	HealthPath string `yaml:"health_path"`
	// HealthBackoffInitial is the wait before the first health check of an
	// unhealthy server; it doubles per failed check up to
	// HealthBackoffMax.
	HealthBackoffInitial time.Duration `yaml:"health_backoff_initial"`
	// HealthBackoffMax caps the wait between health checks.
	HealthBackoffMax time.Duration `yaml:"health_backoff_max"`
	// Affinity sends a request to its key's server while that has room
	// (a tree's requests share the server's prefix cache); off, every
	// request goes to the server with the most room.
	Affinity bool `yaml:"affinity"`
}

// DefaultPoolConfig has no servers (the pool is off).
func DefaultPoolConfig() PoolConfig {
	return PoolConfig{
		ServersFileInterval:  2 * time.Second,
		Limit:                DefaultLimitConfig(),
		UnhealthyAfter:       3,
		HealthPath:           "/models",
		HealthBackoffInitial: 500 * time.Millisecond,
		HealthBackoffMax:     30 * time.Second,
		Affinity:             true,
	}
}

// Enabled says whether a pool is configured (servers or a servers file).
func (c PoolConfig) Enabled() bool { return len(c.Servers) > 0 || c.ServersFile != "" }

// Validate checks the configuration.
func (c PoolConfig) Validate() error {
	var errs []error
	for _, s := range c.Servers {
		if err := checkServerURL(s); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ServersFile != "" && c.ServersFileInterval <= 0 {
		errs = append(errs, fmt.Errorf("servers_file_interval must be > 0, got %s", c.ServersFileInterval))
	}
	if err := c.Limit.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.UnhealthyAfter < 1 {
		errs = append(errs, fmt.Errorf("unhealthy_after must be >= 1, got %d", c.UnhealthyAfter))
	}
	if c.HealthPath != "" && !strings.HasPrefix(c.HealthPath, "/") {
		errs = append(errs, fmt.Errorf("health_path %q must start with /", c.HealthPath))
	}
	if c.HealthBackoffInitial <= 0 || c.HealthBackoffMax < c.HealthBackoffInitial {
		errs = append(errs, fmt.Errorf("health backoff: need 0 < health_backoff_initial (%s) <= health_backoff_max (%s)",
			c.HealthBackoffInitial, c.HealthBackoffMax))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("openai pool config: %w", err)
	}
	return nil
}

func checkServerURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("server %q: %w", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("server %q: scheme must be http or https", s)
	case u.Host == "":
		return fmt.Errorf("server %q has no host", s)
	}
	return nil
}

// readServersFile reads a servers file: one API root per line, blank lines
// and '#' comments ignored.
func readServersFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseServers(string(b))
}

func parseServers(text string) ([]string, error) {
	var out []string
	var errs []error
	for line := range strings.SplitSeq(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, f := range strings.Fields(line) {
			if err := checkServerURL(f); err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, f)
		}
	}
	return out, errors.Join(errs...)
}
