// Package metrics exports a pacer engine's behaviour to Prometheus. It
// implements the engine's hook interfaces (pacer.Hook*) and registers its
// collectors on the Registerer it is given, never on the default registry:
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.New(reg)
//	eng, err := pacer.New(pacer.Config{..., Hooks: pacer.Hooks{m}})
//
// Counters follow the engine's events; gauges (queue depth, in flight,
// paused, current rate, tokens) are read from Engine.Status at scrape time.
// Names are pacer_<subsystem>_<name>_<unit>, with _total on counters. One
// Prometheus value serves one engine; for several engines on one registry,
// wrap the registerer with prometheus.WrapRegistererWith and a label.
package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/pacer"
)

// Prometheus implements the pacer hooks on Prometheus collectors.
// Safe for concurrent use.
type Prometheus struct {
	consumed     prometheus.Counter
	admitted     prometheus.Counter
	admitWait    prometheus.Histogram
	results      *prometheus.CounterVec
	resDelivered prometheus.Counter
	resRetry     prometheus.Counter
	resReject    prometheus.Counter
	latency      prometheus.Histogram
	statuses     *prometheus.CounterVec
	statusCache  sync.Map // int -> prometheus.Counter
	throttled    prometheus.Counter
	retries      prometheus.Counter
	deadLetters  *prometheus.CounterVec
	settled      *prometheus.CounterVec
	settledBy    [4]prometheus.Counter
	pauses       *prometheus.CounterVec
	pauseEv      [2]prometheus.Counter // resume, pause
	rateChanges  *prometheus.CounterVec

	mu     sync.Mutex
	status func() pacer.Status

	// waitByExemplars: the Exemplars hook observes admitWait instead of
	// OnAdmitted (set before the engine starts).
	waitByExemplars bool
}

var (
	_ pacer.HookConsumed   = (*Prometheus)(nil)
	_ pacer.HookAdmitted   = (*Prometheus)(nil)
	_ pacer.HookDelivered  = (*Prometheus)(nil)
	_ pacer.HookRetry      = (*Prometheus)(nil)
	_ pacer.HookDeadLetter = (*Prometheus)(nil)
	_ pacer.HookSettled    = (*Prometheus)(nil)
	_ pacer.HookPaused     = (*Prometheus)(nil)
	_ pacer.HookRate       = (*Prometheus)(nil)
	_ pacer.HookStatus     = (*Prometheus)(nil)
)

// Buckets of the admission wait and delivery latency histograms, seconds.
var (
	WaitBuckets    = []float64{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60}
	LatencyBuckets = prometheus.DefBuckets
)

// RateChangeCauses are the causes pacer_shaper_rate_changes_total starts
// with at 0 (the engine's: adaptive control, rate-limit headers, SetRate,
// Reload).
var RateChangeCauses = []string{"aimd-decrease", "aimd-increase", "pid", "ratelimit-headers", "ratelimit-window-reset", "set-rate", "reload"}

// StartingCodes are the response codes pacer_sink_responses_total starts
// with at 0: success and the throttling answers alerts watch.
var StartingCodes = []int{200, 429, 503}

// New creates the collectors and registers them on reg.
func New(reg prometheus.Registerer) (*Prometheus, error) {
	p := &Prometheus{
		consumed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "source", Name: "consumed_messages_total",
			Help: "Messages handed over by the source."}),
		admitted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "shaper", Name: "admitted_messages_total",
			Help: "Delivery attempts admitted by the shaper (retries included: each attempt costs a permit)."}),
		admitWait: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "pacer", Subsystem: "shaper", Name: "admission_wait_seconds",
			Help: "Time from first asking the shaper to admission, per delivery.", Buckets: WaitBuckets}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "sink", Name: "results_total",
			Help: "Per-message results of delivery attempts, by result (delivered, retry, reject)."}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "pacer", Subsystem: "sink", Name: "delivery_duration_seconds",
			Help: "Duration of Deliver calls.", Buckets: LatencyBuckets}),
		statuses: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "sink", Name: "responses_total",
			Help: "Downstream responses by status code (0: not HTTP)."}, []string{"code"}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "sink", Name: "throttled_responses_total",
			Help: "Responses where the downstream said it is overloaded (429, 503, timeout)."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "retry", Name: "scheduled_total",
			Help: "Messages scheduled for another attempt."}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "deadletter", Name: "messages_total",
			Help: "Dead-letter writes by result (written, failed)."}, []string{"result"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "source", Name: "settled_messages_total",
			Help: "Messages settled with the source, by settlement (ack, term, nak)."}, []string{"settlement"}),
		pauses: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "source", Name: "pause_events_total",
			Help: "Pause and resume events of the source, by event (pause, resume)."}, []string{"event"}),
		rateChanges: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "pacer", Subsystem: "shaper", Name: "rate_changes_total",
			Help: "Changes of the sustained rate, by cause."}, []string{"cause"}),
	}
	p.resDelivered = p.results.WithLabelValues("delivered")
	p.resRetry = p.results.WithLabelValues("retry")
	p.resReject = p.results.WithLabelValues("reject")
	for _, s := range []pacer.Settlement{pacer.SettledAck, pacer.SettledTerm, pacer.SettledNak} {
		p.settledBy[s] = p.settled.WithLabelValues(s.String())
	}
	p.pauseEv[0], p.pauseEv[1] = p.pauses.WithLabelValues("resume"), p.pauses.WithLabelValues("pause")
	// Every known label value starts at 0, so that a healthy system shows
	// zeros on dashboards and alerts, never "No data".
	for _, r := range []string{"written", "failed"} {
		p.deadLetters.WithLabelValues(r)
	}
	for _, c := range RateChangeCauses {
		p.rateChanges.WithLabelValues(c)
	}
	for _, code := range StartingCodes {
		p.statusCounter(code)
	}
	for _, c := range []prometheus.Collector{p.consumed, p.admitted, p.admitWait, p.results, p.latency, p.statuses,
		p.throttled, p.retries, p.deadLetters, p.settled, p.pauses, p.rateChanges, (*statusCollector)(p)} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// OnConsumed implements pacer.HookConsumed.
func (p *Prometheus) OnConsumed(*pacer.Message) { p.consumed.Inc() }

// OnAdmitted implements pacer.HookAdmitted.
func (p *Prometheus) OnAdmitted(n int, wait time.Duration) {
	p.admitted.Add(float64(n))
	if !p.waitByExemplars {
		p.admitWait.Observe(wait.Seconds())
	}
}

// OnDelivered implements pacer.HookDelivered.
func (p *Prometheus) OnDelivered(delivered, retry, reject int, latency time.Duration, fb pacer.Feedback) {
	if delivered > 0 {
		p.resDelivered.Add(float64(delivered))
	}
	if retry > 0 {
		p.resRetry.Add(float64(retry))
	}
	if reject > 0 {
		p.resReject.Add(float64(reject))
	}
	p.latency.Observe(latency.Seconds())
	p.statusCounter(fb.Status).Inc()
	if fb.Throttled {
		p.throttled.Inc()
	}
}

func (p *Prometheus) statusCounter(code int) prometheus.Counter {
	if c, ok := p.statusCache.Load(code); ok {
		return c.(prometheus.Counter)
	}
	c := p.statuses.WithLabelValues(strconv.Itoa(code))
	p.statusCache.Store(code, c)
	return c
}

// OnRetry implements pacer.HookRetry.
func (p *Prometheus) OnRetry(*pacer.Message, time.Duration, error) { p.retries.Inc() }

// OnDeadLetter implements pacer.HookDeadLetter.
func (p *Prometheus) OnDeadLetter(_ *pacer.Message, _ error, err error) {
	if err != nil {
		p.deadLetters.WithLabelValues("failed").Inc()
		return
	}
	p.deadLetters.WithLabelValues("written").Inc()
}

// OnSettled implements pacer.HookSettled.
func (p *Prometheus) OnSettled(_ *pacer.Message, s pacer.Settlement) {
	if int(s) < len(p.settledBy) && p.settledBy[s] != nil {
		p.settledBy[s].Inc()
	}
}

// OnPaused implements pacer.HookPaused.
func (p *Prometheus) OnPaused(paused bool, _ pacer.PauseReason) {
	if paused {
		p.pauseEv[1].Inc()
		return
	}
	p.pauseEv[0].Inc()
}

// OnRateChange implements pacer.HookRate.
func (p *Prometheus) OnRateChange(_, _ float64, cause string) {
	p.rateChanges.WithLabelValues(cause).Inc()
}

// ObserveStatus implements pacer.HookStatus.
func (p *Prometheus) ObserveStatus(f func() pacer.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = f
}

// statusCollector exports the live gauges from the engine's Status.
type statusCollector Prometheus

var (
	descQueueDepth = prometheus.NewDesc("pacer_queue_depth_messages", "Messages waiting in the queue between source and shaper.", nil, nil)
	descQueueCap   = prometheus.NewDesc("pacer_queue_capacity_messages", "Capacity of the queue.", nil, nil)
	descQueueBytes = prometheus.NewDesc("pacer_queue_bytes", "Payload bytes (key, value, headers) of the queued messages, counted with a byte bound (shaping.queue_bytes); 0 without.", nil, nil)
	descInFlight   = prometheus.NewDesc("pacer_dispatch_in_flight_messages", "Messages taken from the queue and not yet settled (deliveries, retries).", nil, nil)
	descRetrying   = prometheus.NewDesc("pacer_retry_pending_messages", "Messages waiting for their next attempt.", nil, nil)
	descPaused     = prometheus.NewDesc("pacer_source_paused", "1 while the source is paused, by reason.", []string{"reason"}, nil)
	descRate       = prometheus.NewDesc("pacer_shaper_rate_per_second", "Current sustained rate (0: unlimited).", nil, nil)
	descConfRate   = prometheus.NewDesc("pacer_shaper_configured_rate_per_second", "Configured (maximum) sustained rate.", nil, nil)
	descTokens     = prometheus.NewDesc("pacer_shaper_tokens", "Permits available in the token bucket (negative while borrowed).", nil, nil)
	descLimit      = prometheus.NewDesc("pacer_downstream_limit_per_second", "The downstream's limit as the auto controller learned it, by source (configured, headers, 429s, latency); 0: unknown.", []string{"source"}, nil)
	descBehaviour  = prometheus.NewDesc("pacer_downstream_behaviour", "1 for how the auto controller saw the downstream limit (headers, 429-only, penalty-box, queueing), 0 for the others.", []string{"behaviour"}, nil)
	descConcLimit  = prometheus.NewDesc("pacer_downstream_concurrency_limit", "The in-flight cap the latency signal set while the downstream queues (0: none, max_in_flight holds).", nil, nil)
	descSinceThr   = prometheus.NewDesc("pacer_downstream_since_throttle_seconds", "Time since the downstream last throttled (-1: never).", nil, nil)
	descPause      = prometheus.NewDesc("pacer_downstream_pause_seconds", "What is left of a pause the downstream imposed on every delivery (Retry-After, a spent window); 0: none.", nil, nil)
	descBrkOpen    = prometheus.NewDesc("pacer_breaker_open", "1 while the systemic-failure breaker is open (source paused, nothing dead-lettered, probing); /status names the failure class.", nil, nil)
	descBrkTrips   = prometheus.NewDesc("pacer_breaker_trips_total", "Times the systemic-failure breaker tripped.", nil, nil)
	descBrkResets  = prometheus.NewDesc("pacer_breaker_resets_total", "Times an operator cleared the open breaker (SIGHUP, POST /resume).", nil, nil)
	descBrkHeld    = prometheus.NewDesc("pacer_breaker_held_messages_total", "Permanent failures the breaker held back from the dead-letter path.", nil, nil)
)

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueueDepth, descQueueCap, descQueueBytes, descInFlight, descRetrying, descPaused, descRate, descConfRate, descTokens, descLimit, descBehaviour, descConcLimit, descSinceThr, descPause, descBrkOpen, descBrkTrips, descBrkResets, descBrkHeld} {
		ch <- d
	}
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	f := c.status
	c.mu.Unlock()
	if f == nil {
		return
	}
	s := f()
	g := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	g(descQueueDepth, float64(s.QueueDepth))
	g(descQueueCap, float64(s.QueueSize))
	g(descQueueBytes, float64(s.QueueBytes))
	g(descInFlight, float64(s.InFlight))
	g(descRetrying, float64(s.Retrying))
	for _, r := range []pacer.PauseReason{pacer.PauseQueueFull, pacer.PauseShaper, pacer.PauseRetryAfter, pacer.PauseStopping, pacer.PauseBroken} {
		v := 0.0
		for _, x := range s.PauseReasons {
			if x == r.String() {
				v = 1
			}
		}
		g(descPaused, v, r.String())
	}
	g(descRate, s.Rate)
	g(descConfRate, s.ConfiguredRate)
	g(descTokens, s.Tokens)
	for _, src := range []pacer.LimitSource{pacer.LimitConfigured, pacer.LimitHeaders, pacer.Limit429, pacer.LimitLatency} {
		v := 0.0
		if s.LimitSource == src.String() {
			v = s.LearnedLimit
		}
		g(descLimit, v, src.String())
	}
	for _, b := range []pacer.Behaviour{pacer.BehaviourHeaders, pacer.Behaviour429, pacer.BehaviourPenaltyBox, pacer.BehaviourQueueing} {
		v := 0.0
		if s.LimitBehaviour == b.String() {
			v = 1
		}
		g(descBehaviour, v, b.String())
	}
	g(descConcLimit, float64(s.ConcurrencyLimit))
	g(descSinceThr, s.SinceThrottle)
	g(descPause, s.PauseSeconds)
	open := 0.0
	if s.Breaker.Open {
		open = 1
	}
	g(descBrkOpen, open)
	c1 := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	c1(descBrkTrips, s.Breaker.Trips)
	c1(descBrkResets, s.Breaker.Resets)
	c1(descBrkHeld, s.Held)
}
