//go:build nocloud

package workspace

// cloudSchemes is empty: this build has no cloud bucket drivers (built
// with -tags nocloud).
const cloudSchemes = " only: built with -tags nocloud"
