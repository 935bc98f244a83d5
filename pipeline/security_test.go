package pipeline_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/murphy-rl/murphy/pipeline"
	"github.com/murphy-rl/murphy/pipeline/pipelinetest"
	"github.com/murphy-rl/murphy/topics"
)

// secureBroker is the test broker's secured listeners, from the variables
// deploy/kafka/kafka.sh env prints.
type secureBroker struct {
	sasl, mtls                []string // SASL_SSL and mutual-TLS listeners
	user, password, pwFile    string
	caFile, certFile, keyFile string
}

func secured(t *testing.T) secureBroker {
	t.Helper()
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			t.Skipf("%s not set: no secured Kafka listener for this test (deploy/kafka/kafka.sh env)", name)
		}
		return v
	}
	return secureBroker{
		sasl: strings.Split(get("MURPHY_KAFKA_SASL_BROKERS"), ","), mtls: strings.Split(get("MURPHY_KAFKA_MTLS_BROKERS"), ","),
		user: get("MURPHY_KAFKA_SASL_USER"), password: get("MURPHY_KAFKA_SASL_PASSWORD"), pwFile: get("MURPHY_KAFKA_SASL_PASSWORD_FILE"),
		caFile: get("MURPHY_KAFKA_CA_FILE"), certFile: get("MURPHY_KAFKA_CLIENT_CERT"), keyFile: get("MURPHY_KAFKA_CLIENT_KEY"),
	}
}

// scram is a SCRAM-SHA-512 client of the SASL_SSL listener, its password from
// the file.
func (b secureBroker) scram() pipeline.KafkaConfig {
	c := pipelinetest.Kafka(b.sasl)
	c.SASL = pipeline.KafkaSASLConfig{Mechanism: pipeline.SASLScramSHA512, Username: b.user, PasswordFile: b.pwFile}
	c.TLS = pipeline.KafkaTLSConfig{Enabled: true, CAFile: b.caFile}
	return c
}

// mutual is a client of the mutual-TLS listener, with the client certificate.
func (b secureBroker) mutual() pipeline.KafkaConfig {
	c := pipelinetest.Kafka(b.mtls)
	c.TLS = pipeline.KafkaTLSConfig{Enabled: true, CAFile: b.caFile, CertFile: b.certFile, KeyFile: b.keyFile}
	return c
}

// secureCatalog creates a catalog's topics through cfg and deletes them
// afterwards, through cfg too.
func secureCatalog(t *testing.T, cfg pipeline.KafkaConfig) topics.Catalog {
	t.Helper()
	cat := topics.Catalog{Prefix: pipelinetest.Unique(t) + ".", Partitions: 2}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := pipeline.EnsureTopics(ctx, cfg, cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var names []string
		for _, n := range topics.All() {
			names = append(names, cat.Topic(n))
		}
		tr := cfg.Transport()
		defer tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: tr}
		if _, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: names}); err != nil {
			t.Logf("delete topics: %v", err)
		}
	})
	return cat
}

// readN reads n records of topic through cfg.
func readN(t *testing.T, cfg pipeline.KafkaConfig, topic string, n int) []pipeline.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ch, err := pipeline.Tail(ctx, cfg, topic)
	if err != nil {
		t.Fatal(err)
	}
	var recs []pipeline.Record
	for len(recs) < n {
		select {
		case r, ok := <-ch:
			if !ok {
				t.Fatalf("read %s: %d of %d records: %v", topic, len(recs), n, ctx.Err())
			}
			recs = append(recs, r)
		case <-ctx.Done():
			t.Fatalf("read %s: %d of %d records: %v", topic, len(recs), n, ctx.Err())
		}
	}
	return recs
}

// runStage runs a pass-through stage (prompts to candidates) on cfg until
// the returned stop is called; stop returns Run's error.
func runStage(t *testing.T, cfg pipeline.KafkaConfig, cat topics.Catalog) (done <-chan error, stop func()) {
	t.Helper()
	rt, err := pipeline.NewRuntime(pipeline.RuntimeConfig{Kafka: cfg, Catalog: cat, Name: "secure", GroupPrefix: cat.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.AddStage(pipeline.Stage{Name: "pass", Inputs: []string{cat.Topic(topics.Prompts)},
		Handler: passThrough(cat.Topic(topics.Candidates))}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- rt.Run(ctx) }()
	return ch, cancel
}

// TestSASLSSLStage runs a stage end to end through the SASL_SSL listener
// (SCRAM-SHA-512 over TLS): topic creation, the runtime's consumer group
// and producer, read-back.
func TestSASLSSLStage(t *testing.T) {
	b := secured(t)
	cfg := b.scram()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cat := secureCatalog(t, cfg)
	done, stop := runStage(t, cfg, cat)
	var outs []pipeline.Out
	for i := 0; i < 20; i++ {
		tree := "tree-" + string(rune('a'+i))
		outs = append(outs, pipeline.Out{Topic: cat.Topic(topics.Prompts), Key: tree, Value: mustEncode(t, prompt(tree))})
	}
	p := pipeline.NewProducer(cfg)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Produce(ctx, outs...); err != nil {
		t.Fatal(err)
	}
	got := readN(t, cfg, cat.Topic(topics.Candidates), 20)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Key)] = true
	}
	if len(seen) != 20 {
		t.Fatalf("%d distinct trees out, want 20", len(seen))
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("runtime did not stop")
	}
}

// TestSecuredClients writes and reads a record with the other mechanisms
// and with mutual TLS (a client certificate, on the listener requiring one).
func TestSecuredClients(t *testing.T) {
	b := secured(t)
	sha256 := b.scram()
	sha256.SASL.Mechanism, sha256.SASL.PasswordFile, sha256.SASL.Password = pipeline.SASLScramSHA256, "", b.password
	plain := b.scram()
	plain.SASL.Mechanism = pipeline.SASLPlain
	for name, cfg := range map[string]pipeline.KafkaConfig{"scram-sha-256": sha256, "plain": plain, "mutual-tls": b.mutual()} {
		t.Run(name, func(t *testing.T) {
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			topic := secureCatalog(t, cfg).Topic(topics.Tasks)
			p := pipeline.NewProducer(cfg)
			defer p.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := p.Produce(ctx, pipeline.Out{Topic: topic, Key: "k", Value: []byte(name)}); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, cfg, topic, 1); string(got[0].Value) != name {
				t.Fatalf("read %q, want %q", got[0].Value, name)
			}
		})
	}
}

// TestSecuredClientsFailFast: a wrong password, a CA that did not sign the
// broker's certificate, a missing client certificate and TLS left off for a
// TLS listener each stop topic
// creation and a running stage within seconds with the broker's (or TLS's)
// error, although kafka.startup_timeout would wait minutes for brokers that
// are down.
func TestSecuredClientsFailFast(t *testing.T) {
	b := secured(t)
	wrongPassword := b.scram()
	wrongPassword.SASL.PasswordFile, wrongPassword.SASL.Password = "", "not-the-password"
	wrongCA := b.scram()
	wrongCA.TLS.CAFile = writeCA(t)
	noCert := b.mutual()
	noCert.TLS.CertFile, noCert.TLS.KeyFile = "", ""
	noTLS := b.scram()
	noTLS.TLS = pipeline.KafkaTLSConfig{}
	cases := []struct {
		name string
		cfg  pipeline.KafkaConfig
		want func(error) bool
	}{
		{"wrong-password", wrongPassword, func(err error) bool { return errors.Is(err, kafka.SASLAuthenticationFailed) }},
		{"wrong-ca", wrongCA, func(err error) bool {
			var ua x509.UnknownAuthorityError
			return errors.As(err, &ua)
		}},
		{"no-client-cert", noCert, func(err error) bool {
			return strings.Contains(err.Error(), "tls: certificate required") || strings.Contains(err.Error(), "tls: bad certificate")
		}},
		{"tls-off", noTLS, func(err error) bool { return strings.Contains(err.Error(), "expecting TLS") }},
	}
	const bound = 20 * time.Second
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.StartupTimeout = 2 * time.Minute
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			cat := topics.Catalog{Prefix: pipelinetest.Unique(t) + ".", Partitions: 1}
			start := time.Now()
			err := pipeline.EnsureTopics(context.Background(), cfg, cat)
			took := time.Since(start)
			t.Logf("EnsureTopics after %s: %v", took.Round(time.Millisecond), err)
			if err == nil || !c.want(err) || !strings.Contains(err.Error(), "kafka.sasl and kafka.tls") {
				t.Fatalf("EnsureTopics: %v, want the %s error", err, c.name)
			}
			if took > bound {
				t.Fatalf("EnsureTopics took %s, want < %s", took, bound)
			}

			start = time.Now()
			done, stop := runStage(t, cfg, cat)
			defer stop()
			select {
			case err := <-done:
				t.Logf("Run after %s: %v", time.Since(start).Round(time.Millisecond), err)
				if err == nil || !c.want(err) {
					t.Fatalf("Run: %v, want the %s error", err, c.name)
				}
			case <-time.After(bound):
				t.Fatalf("Run still running after %s", bound)
			}
		})
	}
}

// TestKafkaSecurityValidate: settings that cannot work are refused by
// Validate with an error naming the setting.
func TestKafkaSecurityValidate(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	empty := filepath.Join(dir, "empty")
	notPEM := filepath.Join(dir, "not.pem")
	for f, v := range map[string]string{pw: "secret\n", empty: "\n", notPEM: "hello"} {
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ca := writeCA(t)
	ok := func(c *pipeline.KafkaConfig) {}
	cases := []struct {
		name string
		set  func(c *pipeline.KafkaConfig)
		want string // "" = valid
	}{
		{"none", ok, ""},
		{"scram-file", func(c *pipeline.KafkaConfig) {
			c.SASL = pipeline.KafkaSASLConfig{Mechanism: "scram-sha-512", Username: "u", PasswordFile: pw}
		}, ""},
		{"plain-inline", func(c *pipeline.KafkaConfig) {
			c.SASL = pipeline.KafkaSASLConfig{Mechanism: "PLAIN", Username: "u", Password: "p"}
		}, ""},
		{"tls-ca", func(c *pipeline.KafkaConfig) { c.TLS = pipeline.KafkaTLSConfig{Enabled: true, CAFile: ca} }, ""},
		{"tls-system-roots", func(c *pipeline.KafkaConfig) { c.TLS = pipeline.KafkaTLSConfig{Enabled: true, ServerName: "kafka"} }, ""},
		{"unknown-mechanism", func(c *pipeline.KafkaConfig) {
			c.SASL = pipeline.KafkaSASLConfig{Mechanism: "GSSAPI", Username: "u", Password: "p"}
		}, `kafka.sasl.mechanism "GSSAPI"`},
		{"no-username", func(c *pipeline.KafkaConfig) {
			c.SASL = pipeline.KafkaSASLConfig{Mechanism: "SCRAM-SHA-256", Password: "p"}
		}, "needs a username"},
		{"no-password", func(c *pipeline.KafkaConfig) {
			c.SASL = pipeline.KafkaSASLConfig{Mechanism: "SCRAM-SHA-256", Username: "u"}
		}, "no password"},
		{"both-passwords", func(c *pipeline.KafkaConfig) {
			c.SASL = pipeline.KafkaSASLConfig{Mechanism: "SCRAM-SHA-256", Username: "u", Password: "p", PasswordFile: pw}
		}, "both set"},
		{"missing-password-file", func(c *pipeline.KafkaConfig) {
			c.SASL = pipeline.KafkaSASLConfig{Mechanism: "SCRAM-SHA-256", Username: "u", PasswordFile: filepath.Join(dir, "nope")}
		}, "kafka.sasl.password_file"},
		{"empty-password-file", func(c *pipeline.KafkaConfig) {
			c.SASL = pipeline.KafkaSASLConfig{Mechanism: "SCRAM-SHA-256", Username: "u", PasswordFile: empty}
		}, "is empty"},
		{"credentials-without-mechanism", func(c *pipeline.KafkaConfig) {
			c.SASL = pipeline.KafkaSASLConfig{Username: "u", Password: "p"}
		}, "no mechanism"},
		{"tls-files-not-enabled", func(c *pipeline.KafkaConfig) { c.TLS = pipeline.KafkaTLSConfig{CAFile: ca} }, "kafka.tls.enabled"},
		{"missing-ca", func(c *pipeline.KafkaConfig) {
			c.TLS = pipeline.KafkaTLSConfig{Enabled: true, CAFile: filepath.Join(dir, "nope")}
		}, "kafka.tls.ca_file"},
		{"ca-not-pem", func(c *pipeline.KafkaConfig) { c.TLS = pipeline.KafkaTLSConfig{Enabled: true, CAFile: notPEM} }, "no PEM certificate"},
		{"cert-without-key", func(c *pipeline.KafkaConfig) { c.TLS = pipeline.KafkaTLSConfig{Enabled: true, CertFile: ca} }, "go together"},
		{"bad-key-pair", func(c *pipeline.KafkaConfig) {
			c.TLS = pipeline.KafkaTLSConfig{Enabled: true, CertFile: ca, KeyFile: notPEM}
		}, "client certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := pipeline.DefaultKafkaConfig()
			tc.set(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestSecurityConfigErrorFailsDial: settings that Validate accepted but that
// no longer apply (the CA file is gone) make every client fail at once with
// the reason, and topic creation stop at once.
func TestSecurityConfigErrorFailsDial(t *testing.T) {
	ca := writeCA(t)
	c := pipeline.DefaultKafkaConfig()
	c.Brokers = []string{"127.0.0.1:1"}
	c.TLS = pipeline.KafkaTLSConfig{Enabled: true, CAFile: ca}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ca); err != nil {
		t.Fatal(err)
	}
	_, err := c.Dialer().DialContext(context.Background(), "tcp", c.Brokers[0])
	if err == nil || !strings.Contains(err.Error(), "kafka.tls.ca_file") {
		t.Fatalf("dial: %v, want the ca_file error", err)
	}
	start := time.Now()
	err = pipeline.EnsureTopics(context.Background(), c, topics.DefaultCatalog())
	if err == nil || !strings.Contains(err.Error(), "kafka.tls.ca_file") || time.Since(start) > 5*time.Second {
		t.Fatalf("EnsureTopics after %s: %v, want the ca_file error at once", time.Since(start), err)
	}
}

// writeCA writes a self-signed CA certificate (one that signed nothing the
// broker has) and returns its file.
func writeCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the broker's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
