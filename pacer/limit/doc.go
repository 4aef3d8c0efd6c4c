// Package limit is the engine's limit control: what the downstream says
// about its limit, turned into the rate, the burst and the pauses the
// engine's admission obeys.
//
// A Controller is driven by the engine through a narrow surface: Observe
// folds in each delivery's answer; GateUntil, ConcurrencyCap and CapWait
// are read on the admission path; the Controller moves the engine's token
// bucket through the Bucket it was given. Inside it:
//
//   - the Retry-After gate (gate.go): no admission before the time the
//     downstream named, every such wait capped at MaxPause;
//   - the limit finder (finder.go): in Auto mode, the downstream's limit
//     learned from what it accepted before a throttle, or read from its
//     rate-limit headers (edge.go learns where a fixed window resets);
//   - the latency signal (queueing.go): an in-flight cap while the
//     downstream queues instead of refusing;
//   - AIMD and PID (controller.go), the older modes;
//   - the limit board (board.go): several workers sharing one learned
//     limit through an algorithms.LimitBoard.
//
// Nothing here reads a clock or sleeps: every method takes now.
package limit
