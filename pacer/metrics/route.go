package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/pacer/route"
)

// RouteCollector exports a pacer/route Router (pacer_route_*), read at
// scrape time from status. Per-destination figures carry the label route:
// the destination's group (route.Config.Group), so the series stay as many
// as the groups however many destinations come and go. Counters include
// the destinations that were closed (route.Status.Groups keeps them).
type RouteCollector struct {
	status func() route.Status
}

// NewRouteCollector returns a collector over status (Router.Status).
func NewRouteCollector(status func() route.Status) *RouteCollector {
	return &RouteCollector{status: status}
}

var (
	descRouteActive    = prometheus.NewDesc("pacer_route_destinations_active", "Destinations with an engine now.", nil, nil)
	descRouteMaxActive = prometheus.NewDesc("pacer_route_destinations_max_active", "The bound on destinations with an engine at once.", nil, nil)
	descRouteOpened    = prometheus.NewDesc("pacer_route_destinations_opened_total", "Destinations given an engine.", nil, nil)
	descRouteClosed    = prometheus.NewDesc("pacer_route_destinations_closed_total", "Destinations closed when idle.", nil, nil)
	descRouteHeld      = prometheus.NewDesc("pacer_route_held_messages", "Messages the router holds for destinations that cannot take them now.", nil, nil)
	descRoutePaused    = prometheus.NewDesc("pacer_route_source_paused", "1 while the router has paused the source (a message waits for room).", nil, nil)
	descRouteMessages  = prometheus.NewDesc("pacer_route_messages_total", "Messages by route and what became of them (consumed, delivered, retried, rejected, dead_lettered, acked, nacked).", []string{"route", "event"}, nil)
	descRouteQueued    = prometheus.NewDesc("pacer_route_queued_messages", "Messages queued in the route's engines plus held for them by the router.", []string{"route"}, nil)
	descRouteInFlight  = prometheus.NewDesc("pacer_route_in_flight_messages", "Deliveries under way to the route's destinations.", []string{"route"}, nil)
	descRouteRate      = prometheus.NewDesc("pacer_route_rate_per_second", "Sum of the route's destinations' current sustained rates.", []string{"route"}, nil)
	descRouteOpen      = prometheus.NewDesc("pacer_route_breakers_open", "The route's destinations whose breaker is open.", []string{"route"}, nil)
	descRouteDests     = prometheus.NewDesc("pacer_route_destinations", "The route's destinations with an engine or held messages.", []string{"route"}, nil)
)

// Describe implements prometheus.Collector.
func (c *RouteCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRouteActive, descRouteMaxActive, descRouteOpened, descRouteClosed, descRouteHeld,
		descRoutePaused, descRouteMessages, descRouteQueued, descRouteInFlight, descRouteRate, descRouteOpen, descRouteDests} {
		ch <- d
	}
}

// routeGauges is one route's figures summed over its destinations.
type routeGauges struct {
	queued, inFlight, rate, open, dests float64
}

// Collect implements prometheus.Collector.
func (c *RouteCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(descRouteActive, float64(st.Active))
	gauge(descRouteMaxActive, float64(st.MaxActive))
	counter(descRouteOpened, st.Opened)
	counter(descRouteClosed, st.Closed)
	gauge(descRouteHeld, float64(st.Held))
	paused := 0.0
	if st.SourcePaused {
		paused = 1
	}
	gauge(descRoutePaused, paused)
	for g, t := range st.Groups {
		for _, ev := range []struct {
			name string
			v    uint64
		}{{"consumed", t.Consumed}, {"delivered", t.Delivered}, {"retried", t.Retried}, {"rejected", t.Rejected},
			{"dead_lettered", t.DeadLettered}, {"acked", t.Acked}, {"nacked", t.Nacked}} {
			counter(descRouteMessages, ev.v, g, ev.name)
		}
	}
	byRoute := map[string]*routeGauges{}
	for _, d := range st.Destinations {
		r := byRoute[d.Group]
		if r == nil {
			r = &routeGauges{}
			byRoute[d.Group] = r
		}
		r.dests++
		r.queued += float64(d.Held)
		if e := d.Engine; e != nil {
			r.queued += float64(e.QueueDepth)
			r.inFlight += float64(e.InFlight)
			r.rate += e.Rate
			if e.Breaker.Open {
				r.open++
			}
		}
	}
	for g, r := range byRoute {
		gauge(descRouteQueued, r.queued, g)
		gauge(descRouteInFlight, r.inFlight, g)
		gauge(descRouteRate, r.rate, g)
		gauge(descRouteOpen, r.open, g)
		gauge(descRouteDests, r.dests, g)
	}
}
