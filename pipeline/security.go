package pipeline

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// Every kafka-go connection of the project is made by a Dialer (readers,
// consumer groups, partition connections) or a Transport (writers, admin
// and metadata clients), and both come from the two methods below: that is
// where KafkaConfig.SASL and KafkaConfig.TLS apply, once for every client.

// Dialer returns the kafka-go Dialer of every reader, consumer group and
// connection to a partition leader: the client id, KafkaConfig.TLS and
// KafkaConfig.SASL. When those settings cannot be applied (a certificate
// file went missing since Validate), every dial fails with the reason.
func (c KafkaConfig) Dialer() *kafka.Dialer {
	d := &kafka.Dialer{ClientID: c.clientID(), Timeout: 10 * time.Second, DualStack: true}
	tc, mech, err := c.security()
	if err != nil {
		d.DialFunc = failDial(err)
		return d
	}
	d.TLS, d.SASLMechanism = tc, mech
	return d
}

// Transport returns the kafka-go Transport of every writer and kafka.Client
// (topic creation, metadata, offsets): the client id, KafkaConfig.TLS and
// KafkaConfig.SASL, like Dialer. The caller closes its idle connections
// when done (CloseIdleConnections).
func (c KafkaConfig) Transport() *kafka.Transport {
	t := &kafka.Transport{ClientID: c.clientID(), DialTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second}
	tc, mech, err := c.security()
	if err != nil {
		t.Dial = failDial(err)
		return t
	}
	t.TLS, t.SASL = tc, mech
	return t
}

// securityError says KafkaConfig.SASL or KafkaConfig.TLS cannot be applied.
type securityError struct{ err error }

func (e *securityError) Error() string { return "kafka: " + e.err.Error() }
func (e *securityError) Unwrap() error { return e.err }

func failDial(err error) func(context.Context, string, string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) { return nil, err }
}

// security builds the TLS configuration (nil = plaintext) and the SASL
// mechanism (nil = none) of c, reading the files they name.
func (c KafkaConfig) security() (*tls.Config, sasl.Mechanism, error) {
	tc, terr := c.TLS.config()
	mech, serr := c.SASL.mechanism()
	if err := errors.Join(terr, serr); err != nil {
		return nil, nil, &securityError{err: err}
	}
	return tc, mech, nil
}

func (t KafkaTLSConfig) config() (*tls.Config, error) {
	if !t.Enabled {
		if t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify {
			return nil, errors.New("kafka.tls: ca_file, cert_file, key_file, server_name and insecure_skip_verify need kafka.tls.enabled: true")
		}
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: t.ServerName,
		// An explicit option, off by default (see KafkaTLSConfig).
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka.tls.ca_file %s: no PEM certificate in it", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	switch {
	case (t.CertFile == "") != (t.KeyFile == ""):
		return nil, errors.New("kafka.tls: cert_file and key_file go together (mutual TLS needs both)")
	case t.CertFile != "":
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls: client certificate %s, key %s: %w", t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// SASL mechanism names, as the brokers spell them.
const (
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
	SASLPlain       = "PLAIN"
)

func (s KafkaSASLConfig) mechanism() (sasl.Mechanism, error) {
	name := strings.ToUpper(strings.TrimSpace(s.Mechanism))
	if name == "" {
		if s.Username != "" || s.Password != "" || s.PasswordFile != "" {
			return nil, fmt.Errorf("kafka.sasl: username or password set but no mechanism (%s, %s or %s)",
				SASLScramSHA512, SASLScramSHA256, SASLPlain)
		}
		return nil, nil
	}
	var algo scram.Algorithm
	switch name {
	case SASLScramSHA256:
		algo = scram.SHA256
	case SASLScramSHA512:
		algo = scram.SHA512
	case SASLPlain:
	default:
		return nil, fmt.Errorf("kafka.sasl.mechanism %q: want %s, %s or %s", s.Mechanism, SASLScramSHA512, SASLScramSHA256, SASLPlain)
	}
	if s.Username == "" {
		return nil, fmt.Errorf("kafka.sasl: mechanism %s needs a username", name)
	}
	pw, err := s.password()
	if err != nil {
		return nil, err
	}
	if algo == nil {
		return plain.Mechanism{Username: s.Username, Password: pw}, nil
	}
	m, err := scram.Mechanism(algo, s.Username, pw)
	if err != nil {
		return nil, fmt.Errorf("kafka.sasl: %s: %w", name, err)
	}
	return m, nil
}

func (s KafkaSASLConfig) password() (string, error) {
	switch {
	case s.Password != "" && s.PasswordFile != "":
		return "", errors.New("kafka.sasl: password and password_file are both set; set one")
	case s.PasswordFile != "":
		b, err := os.ReadFile(s.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("kafka.sasl.password_file: %w", err)
		}
		pw := strings.TrimRight(string(b), "\r\n")
		if pw == "" {
			return "", fmt.Errorf("kafka.sasl.password_file %s is empty", s.PasswordFile)
		}
		return pw, nil
	case s.Password != "":
		return s.Password, nil
	default:
		return "", errors.New("kafka.sasl: no password (set kafka.sasl.password_file, or kafka.sasl.password e.g. through MURPHY_KAFKA__SASL__PASSWORD)")
	}
}

// authFailure reports whether err is the brokers refusing this client, or
// the client refusing the brokers: SASL authentication or authorization
// failed, a certificate did not verify, the broker sent a TLS alert (no or
// a bad client certificate), or the settings cannot be applied. Retrying
// does not help; waiting for the brokers stops at once with the error.
func authFailure(err error) bool {
	if err == nil {
		return false
	}
	var se *securityError
	if errors.As(err, &se) {
		return true
	}
	var ke kafka.Error
	if errors.As(err, &ke) {
		switch ke {
		case kafka.SASLAuthenticationFailed, kafka.UnsupportedSASLMechanism, kafka.IllegalSASLState,
			kafka.TopicAuthorizationFailed, kafka.GroupAuthorizationFailed, kafka.ClusterAuthorizationFailed:
			return true
		}
	}
	var (
		verify   *tls.CertificateVerificationError
		alert    tls.AlertError
		record   tls.RecordHeaderError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		op       *net.OpError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &alert), errors.As(err, &record),
		errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return true
	case errors.As(err, &op) && op.Op == "remote error":
		// A TLS alert from the broker (crypto/tls reports them so):
		// certificate required, bad certificate, unknown CA, handshake failure.
		return true
	case strings.Contains(err.Error(), "broker appears to be expecting TLS"):
		// kafka-go's word (no error value) for a TLS alert in answer to a
		// plaintext request: kafka.tls.enabled is off for a TLS listener.
		return true
	}
	return false
}

// authError is the error of a client the brokers refused (authFailure).
func authError(cfg KafkaConfig, err error) error {
	return fmt.Errorf("kafka %s: authentication or TLS failed (check kafka.sasl and kafka.tls): %w",
		strings.Join(cfg.Brokers, ","), err)
}

// checkBrokers connects to the brokers once they answer (TLS handshake,
// SASL authentication, a metadata request) and returns nil; it keeps
// waiting while they are unreachable, and returns at once with the error
// when they refuse this client (authFailure), or when ctx ends.
func checkBrokers(ctx context.Context, cfg KafkaConfig) error {
	rt := cfg.Transport()
	defer rt.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 30 * time.Second, Transport: rt}
	b := newBackOff(100*time.Millisecond, 5*time.Second)
	for {
		_, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case authFailure(err):
			return authError(cfg, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.NextBackOff()):
		}
	}
}
