package config

import "time"

// NotifyConfig says where a leader orchestrator's node sends the gates
// that open (node/notify): a webhook, a shell hook, or both.
type NotifyConfig struct {
	// Webhook is a URL the gates are POSTed to as JSON (Slack-style
	// incoming webhooks show its "text"); empty: none.
	Webhook string `yaml:"webhook"`
	// Exec is a shell command run with the gates' JSON on stdin; empty:
	// none.
	Exec string `yaml:"exec"`
	// Batch is how long gates are collected before they are sent.
	Batch time.Duration `yaml:"batch"`
}

// DefaultNotifyBatch collects the gates of a few seconds into one
// notification.
const DefaultNotifyBatch = 5 * time.Second

var notifySettings = []setting{
	str("notify.webhook", "notify-webhook", "AGENTIC_NOTIFY_WEBHOOK", "URL the gates that open are POSTed to as JSON (leader only); empty: none", func(c *Config) *string { return &c.Notify.Webhook }),
	str("notify.exec", "notify-exec", "AGENTIC_NOTIFY_EXEC", "shell command run with the gates that open as JSON on stdin (leader only); empty: none", func(c *Config) *string { return &c.Notify.Exec }),
	duration("notify.batch", "notify-batch", "AGENTIC_NOTIFY_BATCH", "how long gates are collected into one notification", func(c *Config) *time.Duration { return &c.Notify.Batch }),
}

func init() { settings = append(settings, notifySettings...) }

// validateNotify reports the notify settings' problems through bad.
func (c *Config) validateNotify(bad func(key, format string, args ...any)) {
	if c.Notify.Batch <= 0 {
		bad("notify.batch", "must be positive, got %s", c.Notify.Batch)
	}
	if w := c.Notify.Webhook; w != "" {
		if err := checkHTTPURL(w); err != nil {
			bad("notify.webhook", "%v", err)
		}
	}
}
