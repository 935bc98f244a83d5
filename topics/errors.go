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

// IsPoison reports whether err (or anything it wraps) is a record error.
func IsPoison(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

func missing(record, field string) error {
	return &Error{Kind: ErrMissingField, Record: record, Field: field}
}

func invalid(record, field, format string, args ...any) error {
	return &Error{Kind: ErrInvalidField, Record: record, Field: field, Err: fmt.Errorf(format, args...)}
}
