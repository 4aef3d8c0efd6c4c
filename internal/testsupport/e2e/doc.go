// Package e2e holds end-to-end tests that wire several of pacer's packages
// together against real protocol servers from internal/testsupport/testenv. It has no
// non-test code.
package e2e
