// Package testcert makes throwaway certificate authorities and certificates
// for tests of TLS between nodes and of client certificates.
package testcert
