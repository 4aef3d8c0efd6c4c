package redislimit

import (
	"context"
	"fmt"
	"math/big"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pacer-dev/pacer/algorithms"
)

// bucketScript is the one Lua script every worker runs: a token bucket whose
// state is the hash {t = tokens, l = last refill}, both integers.
//
// Why a hash of {tokens, last} rather than GCRA's single theoretical arrival
// time (TAT): Lua numbers are doubles, exact only below 2^53. To keep refill
// exact for any rational rate, tokens are counted in integer "units" (one
// token = den units, one microsecond adds num units, num/den being the rate
// in tokens per microsecond, reduced). The bucket's units are bounded by the
// capacity (burst*den) and the elapsed time is capped at the time to fill, so
// every quantity stays an exact integer below 2^53. A TAT is an absolute
// instant: scaled the same way (microseconds times num) it passes 2^53 for
// ordinary rates, so GCRA would have to round. The bucket also makes leases
// natural: "take up to n whole tokens" and "give n back, never above full".
//
// Time: the script reads the Redis server's own clock (TIME), never the
// caller's, so clock skew between workers does not matter. Redis >= 5
// replicates scripts by effects, so TIME is allowed before writes.
//
// A missing key is an EMPTY bucket: a budget nobody has seen (the first
// start), one idle for an hour, or one Redis lost (restarted without
// persistence, flushed, failed over to a replica that never had it) starts
// at zero and refills at the rate, so a Redis wipe costs the workers one
// burst's refill (Burst/Rate) of throughput and never gives them a second
// burst (a missing key read as a full bucket gave +50.7 messages over the
// global envelope). Every bucket is stored, a full one too, and expires an
// hour after it would be full (PEXPIRE = time to fill + fullKeepMs): a
// budget in use never expires, an idle one leaves nothing behind after an
// hour.
//
// KEYS[1]  the bucket hash
// ARGV[1]  num: units added per microsecond
// ARGV[2]  den: units per token
// ARGV[3]  cap: capacity in units (burst*den)
// ARGV[4]  n: > 0 take up to n whole tokens; < 0 give -n tokens back; 0 peek
// ARGV[5]  min: when taking, grant nothing unless at least min are available
//
// Returns {granted, wait_us, units, now_us}: wait_us is how long until the
// n - granted missing tokens would be there (0 when none are missing).
const bucketScript = refillLua + `
local granted = 0
if n > 0 then
  granted = floordiv(units, den)
  if granted > n then granted = n end
  if granted < min then granted = 0 end
  units = units - granted * den
elseif n < 0 then
  units = units - n * den
  if units > cap then units = cap end
end

local wait = 0
if n > 0 and granted < n then
  local need = (n - granted) * den - units
  if need > 0 then wait = ceildiv(need, num) end
end

` + storeLua + `return {granted, wait, units, now}
`

// script is loaded once per process; Run uses EVALSHA and falls back to EVAL
// when the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
var script = goredis.NewScript(bucketScript)

// maxExact is 2^53: Lua numbers are exact integers below it.
const maxExact = 1 << 53

// units is a rate expressed for the script: num units per microsecond, den
// units per token, capacity burst*den; all exact integers below 2^53.
type units struct {
	num, den, cap int64
}

// unitsFor converts r (tokens per r.Per nanoseconds) and burst to script
// units, or explains why they cannot be exact.
func unitsFor(r algorithms.Rate, burst int) (units, error) {
	if err := r.Validate(); err != nil {
		return units{}, err
	}
	// tokens per microsecond = Count*1000 / Per(ns)
	q := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(r.Count), big.NewInt(1000)), big.NewInt(int64(r.Per)))
	num, den := q.Num(), q.Denom()
	c := new(big.Int).Mul(den, big.NewInt(int64(burst)))
	lim := big.NewInt(maxExact)
	if !num.IsInt64() || num.Cmp(lim) >= 0 || c.Cmp(lim) >= 0 {
		return units{}, fmt.Errorf("%w: rate %s with burst %d needs integers beyond 2^53 in the Lua script (use a rate with a shorter period or a smaller burst)", ErrInvalidConfig, r, burst)
	}
	// The elapsed-time product (now-last)*num stays below cap+num.
	if new(big.Int).Add(c, num).Cmp(lim) >= 0 {
		return units{}, fmt.Errorf("%w: rate %s with burst %d is too large for exact arithmetic", ErrInvalidConfig, r, burst)
	}
	return units{num: num.Int64(), den: den.Int64(), cap: c.Int64()}, nil
}

// result is one answer of the script.
type result struct {
	granted int
	wait    time.Duration // until the missing tokens would be there
	units   int64         // bucket content after the call, in units
	now     time.Time     // the server's clock
}

func runScript(ctx context.Context, c goredis.Scripter, key string, u units, n, min int) (result, error) {
	return parseResult(script.Run(ctx, c, []string{key}, u.num, u.den, u.cap, n, min))
}

// job is one script call of a batch.
type job struct {
	key    string
	n, min int
	lane   *laneArgs // a lane's job: laneScript
}

// runScripts runs the jobs in one round trip (a pipeline of EVALSHA; a job
// answered NOSCRIPT did not run and is retried with runScript, which loads
// the script). It returns one result and one error per job.
func runScripts(ctx context.Context, c goredis.UniversalClient, u units, jobs []job) ([]result, []error) {
	res, errs := make([]result, len(jobs)), make([]error, len(jobs))
	run1 := func(j job) (result, error) {
		if j.lane != nil {
			return runLaneScript(ctx, c, j.key, u, j.n, j.min, j.lane)
		}
		return runScript(ctx, c, j.key, u, j.n, j.min)
	}
	if len(jobs) == 1 {
		res[0], errs[0] = run1(jobs[0])
		return res, errs
	}
	pipe := c.Pipeline()
	cmds := make([]*goredis.Cmd, len(jobs))
	for i, j := range jobs {
		if j.lane != nil {
			cmds[i] = laneLua.EvalSha(ctx, pipe, []string{j.key, lanesKey(j.key)}, j.lane.argv(u, j.n, j.min)...)
			continue
		}
		cmds[i] = script.EvalSha(ctx, pipe, []string{j.key}, u.num, u.den, u.cap, j.n, j.min)
	}
	_, _ = pipe.Exec(ctx) // errors are per command
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
			res[i], errs[i] = run1(jobs[i])
			continue
		}
		res[i], errs[i] = parseResult(cmd)
	}
	return res, errs
}

func parseResult(cmd *goredis.Cmd) (result, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return result{}, err
	}
	if len(v) != 4 {
		return result{}, fmt.Errorf("algorithms/redislimit: script returned %d values, want 4", len(v))
	}
	return result{
		granted: int(v[0]),
		wait:    time.Duration(v[1]) * time.Microsecond,
		units:   v[2],
		now:     time.UnixMicro(v[3]),
	}, nil
}

// fullKeepMs is how long a full bucket stays stored: a budget idle for
// longer starts empty again (a missing key is an empty bucket).
const fullKeepMs = 3600 * 1000

// storeLua ends both scripts' bucket update: the bucket is stored (a full
// one too: a missing key is an empty bucket) with an expiry of its time to
// fill plus fullKeepMs.
const storeLua = `if units > cap then units = cap end
redis.call('HSET', KEYS[1], 't', string.format('%.0f', units), 'l', string.format('%.0f', last))
redis.call('PEXPIRE', KEYS[1], ceildiv(ceildiv(cap - units, num), 1000) + 1 + ` + "3600000" + `)
`

// refillLua starts both scripts (the bucket's and the lanes'): it reads the
// server's clock (never the caller's), the common arguments ARGV[1..5], the
// exact integer divisions, and refills the bucket hash KEYS[1] {t: units,
// l: last refill} to now; it leaves units (tokens x den), last, and before
// (the units held before this refill).
const refillLua = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local num = tonumber(ARGV[1])
local den = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local min = tonumber(ARGV[5])

local function ceildiv(a, b)
  local q = math.floor(a / b)
  if q * b < a then q = q + 1 end
  if q > 0 and (q - 1) * b >= a then q = q - 1 end
  return q
end
local function floordiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 end
  if (q + 1) * b <= a then q = q + 1 end
  return q
end

local units, last = 0, now
local v = redis.call('HMGET', KEYS[1], 't', 'l')
local before = 0
if v[1] and v[2] then
  units = tonumber(v[1])
  last = tonumber(v[2])
  if units > cap then units = cap end
  before = units
  if now > last then
    local need = cap - units
    if need > 0 then
      if now - last >= ceildiv(need, num) then
        units = cap
      else
        units = units + (now - last) * num
      end
    end
    last = now
  end
  -- now < last: the server clock went back (e.g. a failover); add nothing
  -- and keep last, so no permits are minted.
end

`
