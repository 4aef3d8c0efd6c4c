// Package sourcekit is what a source adapter builds on besides the
// engine's contracts: the PauseGate that keeps its paused/running state,
// and the Backlog it measures in its broker for /status and the metrics
// (BacklogReader, DrainTime). The engine itself uses neither.
package sourcekit
