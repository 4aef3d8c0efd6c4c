// Package archtest owns the check that the repository keeps the package
// layering ARCHITECTURE.md describes: every package is in its table, and a
// package's non-test code imports only the packages of pacer's its row
// allows. It has no non-test API.
package archtest
