package algorithms

import "errors"

// ErrInvalidConfig is wrapped by every constructor error that rejects a
// configuration value other than a rate (burst, window, capacity, wait bound,
// key table size...). Rate errors wrap ErrInvalidRate.
var ErrInvalidConfig = errors.New("algorithms: invalid config")
