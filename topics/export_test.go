package topics

import json "github.com/goccy/go-json"

// jsonMarshalUnchecked encodes without validation so tests can build bad records.
func jsonMarshalUnchecked(v any) ([]byte, error) { return json.Marshal(v) }
