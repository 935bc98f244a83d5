package topics

import (
	"bytes"
	"fmt"

	json "github.com/goccy/go-json"
)

// Record is implemented by every record type of the catalog.
type Record interface {
	// Validate checks required fields and domains; it returns *Error.
	Validate() error
	recordName() string
	version() int
	setVersion(int)
}

// MaxRecordBytes is the largest record the codec accepts; it is below the
// topics' max.message.bytes so that an oversized record still reaches a
// stage and is dead-lettered with a reason instead of being refused.
const MaxRecordBytes = 16 << 20

// Encode validates r and serialises it. All records share this codec: JSON
// with the field names that are also the Arrow columns and the offline
// interchange format; token columns are packed (see Int32s).
func Encode(r Record) ([]byte, error) {
	if err := checkVersion(r); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", r.recordName(), err)
	}
	return checkSize(r, b)
}

// checkVersion checks that r is of the version this build writes.
func checkVersion(r Record) error {
	if r.version() != SchemaVersion {
		return &Error{Kind: ErrUnknownVersion, Record: r.recordName(),
			Err: fmt.Errorf("schema_version %d, this build writes %d", r.version(), SchemaVersion)}
	}
	return nil
}

// checkSize refuses an encoded record over MaxRecordBytes.
func checkSize(r Record, b []byte) ([]byte, error) {
	if len(b) > MaxRecordBytes {
		return nil, &Error{Kind: ErrOversized, Record: r.recordName(),
			Err: fmt.Errorf("%d bytes > %d", len(b), MaxRecordBytes)}
	}
	return b, nil
}

// Decode parses b into r and validates it. Every failure is a *Error.
func Decode(b []byte, r Record) error {
	if len(b) > MaxRecordBytes {
		return &Error{Kind: ErrOversized, Record: r.recordName(),
			Err: fmt.Errorf("%d bytes > %d", len(b), MaxRecordBytes)}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return &Error{Kind: ErrMalformed, Record: r.recordName(), Err: fmt.Errorf("empty value")}
	}
	if err := json.Unmarshal(b, r); err != nil {
		return &Error{Kind: ErrMalformed, Record: r.recordName(), Err: err}
	}
	if v := r.version(); v < MinSchemaVersion || v > SchemaVersion {
		return &Error{Kind: ErrUnknownVersion, Record: r.recordName(),
			Err: fmt.Errorf("schema_version %d, this build reads %d to %d", v, MinSchemaVersion, SchemaVersion)}
	}
	// Older versions differ only on the wire: the record is current now.
	r.setVersion(SchemaVersion)
	return r.Validate()
}
