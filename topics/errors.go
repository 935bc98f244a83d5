package topics

import (
	"errors"
	"fmt"
)

// ErrorKind classifies why a record was rejected.
type ErrorKind string

const (
	// ErrMalformed: the bytes are not a record of the expected type.
	ErrMalformed ErrorKind = "malformed"
	// ErrUnknownVersion: schema_version is missing or outside
	// MinSchemaVersion..SchemaVersion.
	ErrUnknownVersion ErrorKind = "unknown_schema_version"
	// ErrMissingField: a required field is empty.
	ErrMissingField ErrorKind = "missing_field"
	// ErrInvalidField: a field holds a value outside its domain.
	ErrInvalidField ErrorKind = "invalid_field"
	// ErrOversized: the record exceeds the size limit.
	ErrOversized ErrorKind = "oversized"
)

// Error is a typed record error. Every Error is poison: retrying the same
// bytes cannot succeed, so the record belongs in the DLQ.
type Error struct {
	Kind   ErrorKind
	Record string // record type, e.g. "candidate"
	Field  string
	Err    error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s record: %s", e.Record, e.Kind)
	if e.Field != "" {
		msg += " (" + e.Field + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Reason is a short machine-readable reason for metrics and DLQ records.
func (e *Error) Reason() string { return string(e.Kind) }

// IsPoison reports whether err (or anything it wraps) means the record can
// never be processed: a record error or an error marked with Poison.
func IsPoison(err error) bool {
	var e *Error
	var p *poisonError
	return errors.As(err, &e) || errors.As(err, &p)
}

// PoisonLabel is the reason err was marked with Poison, if it was.
func PoisonLabel(err error) (string, bool) {
	var p *poisonError
	if errors.As(err, &p) {
		return p.reason, true
	}
	return "", false
}

// poisonError marks an error as poison (DLQ, no retry).
type poisonError struct {
	reason string
	err    error
}

func (e *poisonError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *poisonError) Unwrap() error { return e.err }

// Poison marks err as poison with a short reason for metrics and the DLQ.
func Poison(reason string, err error) error {
	if err == nil {
		return nil
	}
	return &poisonError{reason: reason, err: err}
}

// transientError marks an infrastructure failure (the broker is restarting,
// a dependency is down): the record is retried until it succeeds, never
// dead-lettered, because nothing is wrong with it.
type transientError struct{ err error }

func (e *transientError) Error() string { return "transient: " + e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// Transient marks err as a transient infrastructure failure: the record is
// redelivered until it succeeds and never goes to the DLQ.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err: err}
}

// IsTransient reports whether err was marked Transient.
func IsTransient(err error) bool {
	var t *transientError
	return errors.As(err, &t)
}

// Fatal errors stop the stage (configuration or programming errors).
type fatalError struct{ err error }

func (e *fatalError) Error() string { return "fatal: " + e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Fatal marks err as fatal: the stage stops with it.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &fatalError{err: err}
}

// IsFatal reports whether err was marked Fatal.
func IsFatal(err error) bool {
	var f *fatalError
	return errors.As(err, &f)
}

func missing(record, field string) error {
	return &Error{Kind: ErrMissingField, Record: record, Field: field}
}

func invalid(record, field, format string, args ...any) error {
	return &Error{Kind: ErrInvalidField, Record: record, Field: field, Err: fmt.Errorf(format, args...)}
}
