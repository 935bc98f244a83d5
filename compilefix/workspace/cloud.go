//go:build !nocloud

package workspace

// The cloud buckets a store may live on. A build with -tags nocloud (the
// quick start's, make run) leaves these drivers and their SDKs out.
import (
	_ "gocloud.dev/blob/gcsblob" // gs:// URLs
	_ "gocloud.dev/blob/s3blob"  // s3:// URLs
)

const cloudSchemes = ", s3://, gs://"
