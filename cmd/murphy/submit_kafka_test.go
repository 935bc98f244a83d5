package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSubmitKafkaSettings: the publishing commands take the stages' kafka
// settings (SASL, TLS): a bad combination is a usage error, and with the
// test broker's SASL_SSL listener a submission goes through while a wrong
// password fails fast with the broker's answer.
func TestSubmitKafkaSettings(t *testing.T) {
	humaneval := filepath.Join(sharedData, "humaneval/HumanEval.jsonl.gz")
	_, _, err := runMurphy(t, "submit", "--tasks", humaneval, "--calibrate=false", "--brokers", "127.0.0.1:1",
		"--kafka.sasl.mechanism", "SCRAM-SHA-512", "--kafka.sasl.username", "murphy")
	var ee *exitError
	if err == nil || !strings.Contains(err.Error(), "sasl") {
		t.Fatalf("SASL without a password: %v", err)
	}
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Errorf("want a usage error (exit 2): %v", err)
	}
	for _, cmd := range [][]string{{"submit"}, {"backfill", "submit"}} {
		out, _, _ := runMurphy(t, append(cmd, "--help")...)
		for _, flag := range []string{"--kafka.sasl.mechanism", "--kafka.tls.ca-file", "--brokers", "--config"} {
			if !strings.Contains(out, flag) {
				t.Errorf("murphy %s --help lacks %s", strings.Join(cmd, " "), flag)
			}
		}
	}

	brokers := os.Getenv("MURPHY_KAFKA_SASL_BROKERS")
	if brokers == "" {
		t.Skip("MURPHY_KAFKA_SASL_BROKERS unset (deploy/kafka/kafka.sh env): the secured listener is not tested")
	}
	if _, err := os.Stat(humaneval); err != nil {
		t.Skip("no HumanEval at " + humaneval)
	}
	prefix := "subsasl" + time.Now().Format("150405.000000") + "."
	args := []string{"submit", "--tasks", humaneval, "--calibrate=false", "-k", "1", "--topic-prefix", prefix, "--brokers", brokers,
		"--kafka.sasl.mechanism", "SCRAM-SHA-512", "--kafka.sasl.username", os.Getenv("MURPHY_KAFKA_SASL_USER"),
		"--kafka.tls.enabled", "--kafka.tls.ca-file", os.Getenv("MURPHY_KAFKA_CA_FILE")}
	stdout, stderr, err := runMurphy(t, append(args, "--kafka.sasl.password-file", os.Getenv("MURPHY_KAFKA_SASL_PASSWORD_FILE"))...)
	if err != nil || !strings.Contains(stdout, "164 tasks") {
		t.Fatalf("submit over SASL_SSL: %v\n%s\n%s", err, stdout, stderr)
	}
	start := time.Now()
	_, _, err = runMurphy(t, append(args, "--kafka.sasl.password", "not-the-password")...)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "sasl") || time.Since(start) > 30*time.Second {
		t.Fatalf("wrong password: %v after %v", err, time.Since(start))
	}
}
