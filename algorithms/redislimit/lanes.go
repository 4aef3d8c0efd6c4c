package redislimit

import (
	"context"
	"fmt"
	"math"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// laneScript is bucketScript with priority lanes: the same bucket hash
// (KEYS[1], {t, l}, the same refill on the server's clock), shared by
// workers of different lanes with one preference.
//
// Model. Lane 0 is the highest. A lane is "waiting" while a request of its
// came up short (until the wait it was told, plus a linger): its mark is
// w<i> in the lanes hash (KEYS[2]), a server-clock instant in microseconds;
// a request granted in full clears it. A lane with a floor f (thousandths)
// earns an earmark e<i> of f/1000 of every unit the bucket refills while it
// is waiting (at most max(one token, f/1000 of the capacity)); earmarks
// are held inside the bucket's units (their sum never exceeds them) and
// only their lane may take them. The rest of the bucket (the free pool)
// goes to a lane only when no higher lane is waiting. So while every lane
// wants more than the budget, lane i gets at least f_i of the refill and
// the highest waiting lane gets everything else; a lane that wants less
// than the budget never makes a lower lane wait (its requests are granted
// in full, its mark cleared). An earmark of a lane that stopped waiting
// goes back to the free pool.
//
// Workers running the plain bucketScript on the same bucket take from the
// free pool as if they were the top lane (and never see the earmarks).
//
// KEYS[1]  the bucket hash (shared with bucketScript)
// KEYS[2]  the lanes hash {w<i>, e<i>}
// ARGV[1..5] as bucketScript: num, den, cap, n (> 0 take, < 0 give back), min
// ARGV[6]  lane (0-based)
// ARGV[7]  linger: microseconds a short lane stays waiting beyond its wait
// ARGV[8..] floors of lanes 0..L-1, thousandths (the lane count is their count)
//
// Returns {granted, wait_us, units, now_us} like bucketScript.
const laneScript = refillLua + `
local lane = tonumber(ARGV[6]) + 1
local linger = tonumber(ARGV[7])
local nl = #ARGV - 7
local added = units - before

-- lanes: waiting marks and earmarks
local fields = {}
for i = 1, nl do
  fields[#fields + 1] = 'w' .. (i - 1)
  fields[#fields + 1] = 'e' .. (i - 1)
end
local lv = redis.call('HMGET', KEYS[2], unpack(fields))
local w, e, floor = {}, {}, {}
local earmarked = 0
for i = 1, nl do
  w[i] = tonumber(lv[2 * i - 1] or '0') or 0
  e[i] = tonumber(lv[2 * i] or '0') or 0
  floor[i] = tonumber(ARGV[7 + i])
  if w[i] <= now then
    w[i] = 0
    e[i] = 0
  elseif floor[i] > 0 and added > 0 then
    -- f/1000 of added, exactly below 2^53: (added div 1000)*f + (added mod 1000)*f div 1000
    local q = math.floor(added / 1000)
    local r = added - q * 1000
    e[i] = e[i] + q * floor[i] + math.floor(r * floor[i] / 1000)
    local ecap = math.floor(cap / 1000) * floor[i]
    if ecap < den then ecap = den end
    if ecap > cap then ecap = cap end
    if e[i] > ecap then e[i] = ecap end
  end
  earmarked = earmarked + e[i]
end
-- earmarks live inside the bucket: trim the highest lanes' first
local i = 1
while earmarked > units and i <= nl do
  local d = earmarked - units
  if d > e[i] then d = e[i] end
  e[i] = e[i] - d
  earmarked = earmarked - d
  i = i + 1
end

local higher = false
for j = 1, lane - 1 do
  if w[j] > 0 then higher = true end
end

local granted = 0
local wait = 0
if n > 0 then
  local avail = e[lane]
  if not higher then avail = avail + units - earmarked end
  granted = floordiv(avail, den)
  if granted > n then granted = n end
  if granted < min then granted = 0 end
  local take = granted * den
  local fromMark = take
  if fromMark > e[lane] then fromMark = e[lane] end
  e[lane] = e[lane] - fromMark
  units = units - take
  if granted < n then
    local need = (n - granted) * den - (avail - take)
    if need < 1 then need = 1 end
    if not higher then
      wait = ceildiv(need, num)
    elseif floor[lane] > 0 then
      wait = ceildiv(ceildiv(need, num) * 1000, floor[lane])
    else
      wait = linger
    end
    w[lane] = now + wait + linger
  else
    w[lane] = 0
    e[lane] = 0
  end
elseif n < 0 then
  units = units - n * den
  if units > cap then units = cap end
end

` + storeLua + `local out = {}
local live = 0
for k = 1, nl do
  out[#out + 1] = 'w' .. (k - 1)
  out[#out + 1] = string.format('%.0f', w[k])
  out[#out + 1] = 'e' .. (k - 1)
  out[#out + 1] = string.format('%.0f', e[k])
  if w[k] > live then live = w[k] end
end
if live > now then
  redis.call('HSET', KEYS[2], unpack(out))
  redis.call('PEXPIRE', KEYS[2], ceildiv(live - now, 1000) + 1)
else
  redis.call('DEL', KEYS[2])
end
return {granted, wait, units, now}
`

var laneLua = goredis.NewScript(laneScript)

// defaultLinger is Config.LaneLinger's default.
const defaultLinger = 20 * time.Millisecond

// laneArgs is what a lane job adds to a bucket job: its lane, the linger
// and every lane's floor, in thousandths.
type laneArgs struct {
	lane   int
	linger int64 // microseconds
	floors []int64
}

func (a *laneArgs) argv(u units, n, min int) []any {
	args := make([]any, 0, 7+len(a.floors))
	args = append(args, u.num, u.den, u.cap, n, min, a.lane, a.linger)
	for _, f := range a.floors {
		args = append(args, f)
	}
	return args
}

// lanesKey is the lanes hash beside bucket key k (same hash tag: one slot).
func lanesKey(k string) string { return k + ":lanes" }

func runLaneScript(ctx context.Context, c goredis.Scripter, key string, u units, n, min int, a *laneArgs) (result, error) {
	return parseResult(laneLua.Run(ctx, c, []string{key, lanesKey(key)}, a.argv(u, n, min)...))
}

// validateLanes checks Lanes and Floors (see Config).
func (c Config) validateLanes() error {
	if c.Lanes == 0 && len(c.Floors) == 0 {
		return nil
	}
	if c.Lanes < 2 || c.Lanes > 64 {
		return fmt.Errorf("%w: lanes %d (want 2..64, or 0 for none)", ErrInvalidConfig, c.Lanes)
	}
	if len(c.Floors) > c.Lanes {
		return fmt.Errorf("%w: %d floors for %d lanes", ErrInvalidConfig, len(c.Floors), c.Lanes)
	}
	sum := 0.0
	for i, f := range c.Floors {
		if f < 0 || f >= 1 || math.IsNaN(f) {
			return fmt.Errorf("%w: floor %g of lane %d (want 0 <= floor < 1)", ErrInvalidConfig, f, i)
		}
		sum += f
	}
	if sum > 1 {
		return fmt.Errorf("%w: floors sum to %g (want <= 1)", ErrInvalidConfig, sum)
	}
	if c.LaneLinger < 0 {
		return fmt.Errorf("%w: lane linger %v must be >= 0", ErrInvalidConfig, c.LaneLinger)
	}
	return nil
}

// newLanes builds the per-lane local buckets and the script arguments.
func (l *Limiter) newLanes(now time.Time) {
	if l.cfg.Lanes == 0 {
		return
	}
	floors := make([]int64, l.cfg.Lanes)
	for i, f := range l.cfg.Floors {
		if i > 0 { // lane 0 is served first: it needs no floor
			floors[i] = int64(math.Round(f * 1000))
		}
	}
	linger := l.cfg.LaneLinger
	if linger == 0 {
		linger = defaultLinger
	}
	l.lanes = make([]*bucket, l.cfg.Lanes)
	for i := range l.lanes {
		b := l.newBucket(l.redisKey(nil), "", now)
		b.lane = &laneArgs{lane: i, linger: linger.Microseconds(), floors: floors}
		l.lanes[i] = b
	}
}

// ReserveLane is Reserve for a message of priority lane (0 the highest;
// out of range: the lowest): the shared budget, preferring higher lanes
// across every worker (see Config.Lanes). Without lanes it is Reserve.
func (l *Limiter) ReserveLane(now time.Time, lane, n int) (time.Duration, bool) {
	if len(l.lanes) == 0 {
		return l.Reserve(now, n)
	}
	return l.reserveOn(now, l.laneBucket(lane), n)
}

// CancelLane returns n permits granted by ReserveLane to lane's lease.
func (l *Limiter) CancelLane(now time.Time, lane, n int) {
	if len(l.lanes) == 0 {
		l.Cancel(now, n)
		return
	}
	l.cancelOn(now, l.laneBucket(lane), n)
}

// Lanes is the number of priority lanes (0: none).
func (l *Limiter) Lanes() int { return len(l.lanes) }

func (l *Limiter) laneBucket(lane int) *bucket {
	if lane < 0 || lane >= len(l.lanes) {
		lane = len(l.lanes) - 1
	}
	return l.lanes[lane]
}
