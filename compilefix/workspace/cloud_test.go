//go:build !nocloud

package workspace

import (
	"testing"

	"gocloud.dev/blob"
)

// TestCloudDrivers: a default build opens s3:// and gs:// stores.
func TestCloudDrivers(t *testing.T) {
	for _, s := range []string{"s3", "gs", "file", "mem"} {
		if !blob.DefaultURLMux().ValidBucketScheme(s) {
			t.Errorf("no %s:// driver", s)
		}
	}
}
