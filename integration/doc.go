// Package integration holds airlock's end-to-end tests. They run real containers on
// the real engine (no fakes), push every limit past its edge, and check that
// nothing airlock creates is left behind.
package integration
