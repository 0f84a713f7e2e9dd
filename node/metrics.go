package node

import (
	"net/http"
	"time"

	"github.com/agentic-dev/agentic/node/settings"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves Prometheus metrics: Go and process collectors, and
// gauges read from the node's parts at scrape time.
func (n *Node) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "agentic", Name: name, Help: help, ConstLabels: prometheus.Labels{"node": n.cfg.Name}}, f))
	}
	gauge("gates_open", "Gates open: steps and plans waiting for operators (agentctl gate ls).", func() float64 {
		if x := n.runs; x != nil {
			if c, _, err := x.OpenGates(); err == nil {
				return float64(c)
			}
		}
		return 0
	})
	gauge("gates_open_oldest_seconds", "Age of the oldest open gate (0 when none is open): gates left unseen.", func() float64 {
		if x := n.runs; x != nil {
			if _, oldest, err := x.OpenGates(); err == nil && !oldest.IsZero() {
				return time.Since(oldest).Seconds()
			}
		}
		return 0
	})
	gauge("gate_notifications_sent_total", "Batches of opened gates sent to the notify webhook or hook since start.", func() float64 {
		if nt := n.notifier; nt != nil {
			return float64(nt.Stats().Sent)
		}
		return 0
	})
	gauge("gate_notifications_failed_total", "Batches of opened gates that could not be sent (after retries) since start.", func() float64 {
		if nt := n.notifier; nt != nil {
			return float64(nt.Stats().Failed)
		}
		return 0
	})
	gauge("outbox_pending", "Events emitted but not yet acknowledged by JetStream.", func() float64 {
		if ob := n.outbox; ob != nil {
			return float64(ob.Pending())
		}
		return 0
	})
	gauge("outbox_published_total", "Events acknowledged by JetStream since start.", func() float64 {
		if ob := n.outbox; ob != nil {
			return float64(ob.Published())
		}
		return 0
	})
	gauge("ledger_head_seq", "Ledger head position.", func() float64 {
		if st := n.store; st != nil {
			seq, _ := st.Head()
			return float64(seq)
		}
		return 0
	})
	gauge("ledger_applied_stream_seq", "Last AGENTIC_EVENTS sequence folded into the ledger.", func() float64 {
		if st := n.store; st != nil {
			return float64(st.AppliedStreamSeq())
		}
		return 0
	})
	gauge("ledger_gaps_total", "Holes in the stream sequence recorded since start (ledger.gap).", func() float64 {
		if f := n.follower; f != nil {
			return float64(f.Stats().Gaps)
		}
		return 0
	})
	gauge("events_republished_total", "Messages their own signer sent again after a restart, refused as harmless duplicates.", func() float64 {
		if f := n.follower; f != nil {
			return float64(f.Stats().Republished)
		}
		return 0
	})
	gauge("events_rejected_total", "Messages refused since start (event.rejected): forgeries, replays, bad signatures.", func() float64 {
		if f := n.follower; f != nil {
			return float64(f.Stats().Rejected)
		}
		return 0
	})
	gauge("executor_fenced_total", "Assignments and cancels an executor dropped because a newer leader was elected before them.", func() float64 {
		if e := n.exec; e != nil {
			return float64(e.Stats().Fenced)
		}
		return 0
	})
	gauge("executor_running", "Step attempts running on this executor.", func() float64 {
		if e := n.exec; e != nil {
			return float64(e.Stats().Running)
		}
		return 0
	})
	if srv := n.apiSrv; srv != nil {
		gauge("api_long_polls", "Query API long-polls (audit followers) waiting now.", func() float64 { return float64(srv.LongPolls()) })
	}
	reg.MustRegister(rejectCollector{n: n,
		total: prometheus.NewDesc("agentic_rejected_total",
			"Stream messages (and events) the ledger refused since start, by rejection code, whether recorded one by one (event.rejected) or counted in a summary (event.rejected_summary).",
			[]string{"code"}, prometheus.Labels{"node": n.cfg.Name}),
		dropped: prometheus.NewDesc("agentic_rejected_dropped_total",
			"Refused messages counted in event.rejected_summary records instead of each recorded, since start: beyond the rejection rate (REJECT_FLOOD).",
			nil, prometheus.Labels{"node": n.cfg.Name}),
	})
	reg.MustRegister(driftCollector{n: n, desc: prometheus.NewDesc("agentic_stream_drift",
		"1 when a stream differs from the cluster settings in force on this field (node/settings), 0 when it matches; present once the node has compared the stream.",
		[]string{"stream", "field"}, prometheus.Labels{"node": n.cfg.Name})})
	reg.MustRegister(skewCollector{n: n, desc: prometheus.NewDesc("agentic_clock_skew_seconds",
		"Clock skew of each signer seen by this ledger node: its messages' iat against their stream timestamps, positive when its clock is ahead (ledger/follow). Past half of the leeway (envelope.Leeway, 30s) the node warns; past it the signer's events are rejected.",
		[]string{"signer"}, prometheus.Labels{"node": n.cfg.Name})})
	reg.MustRegister(checkCollector{n: n,
		ok: prometheus.NewDesc("agentic_check_ok",
			"1 when the readiness check passed its last probe, 0 when it failed (internal/health; /readyz lists the reasons).",
			[]string{"check"}, prometheus.Labels{"node": n.cfg.Name}),
		alarm: prometheus.NewDesc("agentic_alarm",
			"1 while the alarm is in force on this node (raised by a failing check, not yet cleared), 0 otherwise; one series per alarm its checks can raise.",
			[]string{"alarm"}, prometheus.Labels{"node": n.cfg.Name}),
	})
	gauge("ready", "1 when the node is ready.", func() float64 {
		if n.Ready() == nil {
			return 1
		}
		return 0
	})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// driftCollector exports agentic_stream_drift{stream,field} from the
// node's last comparison of the streams with the cluster settings.
type driftCollector struct {
	n    *Node
	desc *prometheus.Desc
}

func (d driftCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d driftCollector) Collect(ch chan<- prometheus.Metric) {
	c := d.n.settings
	if c == nil {
		return
	}
	for stream, drift := range c.Drift() {
		for _, field := range settings.Fields() {
			v := 0.0
			for _, dr := range drift {
				if dr.Field == field {
					v = 1
				}
			}
			ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, v, stream, field)
		}
	}
}

// skewCollector exports agentic_clock_skew_seconds{signer} from the
// follower's measurements.
type skewCollector struct {
	n    *Node
	desc *prometheus.Desc
}

func (c skewCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c skewCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.n.follower
	if f == nil {
		return
	}
	for signer, skew := range f.Skews() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, skew.Seconds(), signer)
	}
}

// checkCollector exports agentic_check_ok{check} and agentic_alarm{alarm}
// from the node's health monitor.
type checkCollector struct {
	n         *Node
	ok, alarm *prometheus.Desc
}

func (c checkCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.ok; ch <- c.alarm }

func (c checkCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.n.health
	if m == nil {
		return
	}
	for _, s := range m.Statuses() {
		v := 0.0
		if s.OK {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.ok, prometheus.GaugeValue, v, s.Name)
	}
	for code, on := range m.Alarms() {
		v := 0.0
		if on {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.alarm, prometheus.GaugeValue, v, string(code))
	}
}

// rejectCollector exports agentic_rejected_total{code} and
// agentic_rejected_dropped_total from the ledger's rejection counts.
type rejectCollector struct {
	n              *Node
	total, dropped *prometheus.Desc
}

func (c rejectCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.total; ch <- c.dropped }

func (c rejectCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.n.follower
	if f == nil {
		return
	}
	st := f.Rejections()
	for code, v := range st.ByCode {
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.CounterValue, float64(v), string(code))
	}
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.Dropped))
}
