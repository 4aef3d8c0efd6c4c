package redislimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pacer-dev/pacer/algorithms"
)

// boardScript is a LimitBoard's one call (see algorithms.LimitBoard): add
// this worker's accepted counts slot by slot, apply the proposal if its
// epoch is the board's, and answer the whole board. The hash holds
// e (epoch), lim, rate, thr, probe (the proposal last applied, as the
// worker sent them) and a ring of slots: i<j> the slot index, c<j> its
// count, j = slot mod BoardSlots.
//
// Slots are the workers' clocks (unix time / BoardSlot), not Redis's: a
// count belongs to the moment the downstream answered, which only the
// worker knows. Workers whose clocks differ by more than a slot (100 ms)
// blur the group's measurement by that much; keep them on NTP.
//
// KEYS[1]  the board hash
// ARGV[1]  the caller's current slot
// ARGV[2]  ttl in milliseconds (an idle group's board goes away)
// ARGV[3]  "1" with a proposal, else "0"
// ARGV[4]  the proposal's epoch
// ARGV[5..8] its limit, rate, throttle and probe-until (strings, kept as sent)
// ARGV[9..] slot, count pairs
var boardScript = `
local k = KEYS[1]
local cur = tonumber(ARGV[1])
local S = ` + strconv.Itoa(algorithms.BoardSlots) + `
for i = 9, #ARGV, 2 do
  local slot = tonumber(ARGV[i])
  local n = tonumber(ARGV[i + 1])
  if slot <= cur and slot > cur - S and n > 0 then
    local j = slot % S
    local idx = tonumber(redis.call('HGET', k, 'i' .. j) or '-1')
    if idx ~= slot then
      redis.call('HSET', k, 'i' .. j, ARGV[i], 'c' .. j, ARGV[i + 1])
    else
      redis.call('HINCRBY', k, 'c' .. j, n)
    end
  end
end
local epoch = tonumber(redis.call('HGET', k, 'e') or '0')
if ARGV[3] == '1' and tonumber(ARGV[4]) == epoch then
  redis.call('HSET', k, 'e', string.format('%.0f', epoch + 1), 'lim', ARGV[5], 'rate', ARGV[6], 'thr', ARGV[7], 'probe', ARGV[8])
end
redis.call('PEXPIRE', k, tonumber(ARGV[2]))
local fields = {'e', 'lim', 'rate', 'thr', 'probe'}
for j = 0, S - 1 do
  fields[#fields + 1] = 'i' .. j
  fields[#fields + 1] = 'c' .. j
end
return redis.call('HMGET', k, unpack(fields))
`

var board = goredis.NewScript(boardScript)

// boardTTL is how long a group's board outlives its last sync.
const boardTTL = 10 * time.Minute

// boardKey is the board's Redis key: in the shared budget's cluster slot.
func (l *Limiter) boardKey() string { return l.redisKey(nil) + ":board" }

// SyncLimit implements algorithms.LimitBoard next to the shared budget:
// the workers of one budget (same Prefix and Name) share one board. One
// round trip, bounded by Config.Timeout; a failure is returned (the
// caller goes on with the last state it saw) and never touches the
// budget's fail-open or fail-closed policy.
func (l *Limiter) SyncLimit(ctx context.Context, now time.Time, accepted []algorithms.SlotCount, p *algorithms.LimitProposal) (algorithms.LimitState, error) {
	cur := algorithms.BoardSlotOf(now)
	args := make([]any, 0, 8+2*len(accepted))
	args = append(args, cur, boardTTL.Milliseconds())
	if p != nil {
		args = append(args, "1", p.Epoch, fmtFloat(p.Limit), fmtFloat(p.Rate), fmtTime(p.Throttle), fmtTime(p.ProbeUntil))
	} else {
		args = append(args, "0", 0, "", "", "", "")
	}
	for _, c := range accepted {
		args = append(args, c.Slot, c.N)
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	v, err := board.Run(ctx, l.client, []string{l.boardKey()}, args...).Slice()
	if err != nil {
		return algorithms.LimitState{}, fmt.Errorf("redis limit board %s: %w", l.boardKey(), err)
	}
	return parseBoard(v, cur)
}

// parseBoard reads boardScript's answer at the caller's slot cur.
func parseBoard(v []any, cur int64) (algorithms.LimitState, error) {
	var st algorithms.LimitState
	if len(v) != 5+2*algorithms.BoardSlots {
		return st, fmt.Errorf("redis limit board: %d fields in the answer, want %d", len(v), 5+2*algorithms.BoardSlots)
	}
	str := func(i int) string {
		s, _ := v[i].(string) // nil: the field is not set
		return s
	}
	var err error
	bad := func(what string, e error) {
		if err == nil && e != nil {
			err = fmt.Errorf("redis limit board: %s: %w", what, e)
		}
	}
	if s := str(0); s != "" {
		st.Epoch, err = strconv.ParseUint(s, 10, 64)
		bad("epoch", err)
	}
	if st.Epoch > 0 {
		st.Limit, err = strconv.ParseFloat(str(1), 64)
		bad("limit", err)
		var e error
		st.Rate, e = strconv.ParseFloat(str(2), 64)
		bad("rate", e)
		st.Throttle, e = parseTime(str(3))
		bad("throttle", e)
		st.ProbeUntil, e = parseTime(str(4))
		bad("probe", e)
	}
	first := cur - algorithms.BoardSlots + 1
	st.SlotStart = time.Unix(0, first*int64(algorithms.BoardSlot))
	for j := range algorithms.BoardSlots {
		is, cs := str(5+2*j), str(6+2*j)
		if is == "" || cs == "" {
			continue
		}
		idx, e1 := strconv.ParseInt(is, 10, 64)
		n, e2 := strconv.ParseInt(cs, 10, 64)
		bad("slot", e1)
		bad("count", e2)
		if i := idx - first; i >= 0 && i < algorithms.BoardSlots {
			st.Counts[i] = n
		}
	}
	return st, err
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// fmtTime is t as unix nanoseconds ("" for the zero time).
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	ns, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ns), nil
}

var _ algorithms.LimitBoard = (*Limiter)(nil)
