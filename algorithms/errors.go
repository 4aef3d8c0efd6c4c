package algorithms

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidConfig is wrapped by every constructor error that rejects a
// configuration value other than a rate (burst, window, capacity, wait bound,
// key table size...). Rate errors wrap ErrInvalidRate.
var ErrInvalidConfig = errors.New("algorithms: invalid config")

// Never is the wait of a refusal that no later asking can turn into a
// grant: n is above what the limiter can ever grant at once (its burst,
// capacity or window limit), or a Keyed table is full of keys that never
// go idle. It is x/time/rate's InfDuration.
//
// A refusal's wait has three answers:
//
//   - wait > 0 and not Never: ask again after wait;
//   - Never: asking again with the same n will never succeed;
//   - 0: the limiter cannot tell (a Keyed table whose New failed, a
//     ScheduledBucket whose schedule may later lift the rule); the caller
//     picks its own retry interval.
const Never = time.Duration(math.MaxInt64)

// ErrWouldNotGrant is returned by Wait when the limiter refuses n and
// cannot tell when asking again could succeed (a refusal with wait 0).
// Wait's Never errors wrap it too, so errors.Is(err, ErrWouldNotGrant)
// covers both; test ErrNever to tell them apart.
var ErrWouldNotGrant = errors.New("algorithms: limiter would not grant")

// ErrNever is returned by Wait (wrapped) when the limiter answers Never: n
// can never be granted. It wraps ErrWouldNotGrant.
var ErrNever = fmt.Errorf("%w, ever", ErrWouldNotGrant)
